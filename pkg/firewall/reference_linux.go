package firewall

import (
	"context"
	"strings"

	"cnisuite/pkg/types"
)

// removeReference adds to batch the deletion of what the reference plugins
// wrote for the same attachment, found over netlink on conn, so that the
// common case (nothing there) costs a few lookups and no process:
//
//   - portmap: rules commented with the container ID in the nftables
//     tables ip/ip6 cni_hostport; the iptables(-nft) chain CNI-DN-<hash>
//     and its jumps in CNI-HOSTPORT-DNAT.
//   - bridge: rules of inet cni_plugins_masquerade whose comment starts
//     with the attachment's hash; the spoof-check chains of table bridge
//     nat; the iptables(-nft) masquerade chain CNI-<hash> and its jumps in
//     POSTROUTING.
//
// Rules written by iptables-legacy are not visible over netlink and are
// left alone. Jumps are deleted by rule handle, which costs nothing per
// other rule of the parent chain (iptables -D would compare them all).
func removeReference(_ context.Context, conn *nlConn, o Owner, batch *nlBatch) error {
	var errs []error
	collect := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch o.Plugin {
	case PluginPortmap:
		for _, fam := range []string{"ip", "ip6"} {
			for _, ch := range []string{"hostports", "hostip_hostports", "masquerading"} {
				collect(refDeleteRules(conn, batch, nftTable{fam, "cni_hostport"}, ch, func(r nlRule) bool {
					return r.comment == o.ContainerID
				}))
			}
			collect(refChain(conn, batch, nftTable{fam, "nat"}, refDNChain(o), "CNI-HOSTPORT-DNAT"))
		}
	case PluginBridge:
		prefix := refHash16(o.Network) + "-" + refHash16(o.IfName+":"+o.ContainerID)
		collect(refDeleteRules(conn, batch, nftTable{"inet", "cni_plugins_masquerade"}, "masq_checks", func(r nlRule) bool {
			return strings.HasPrefix(r.comment, prefix)
		}))
		collect(refSpoofCheck(conn, batch, o))
		for _, fam := range []string{"ip", "ip6"} {
			collect(refChain(conn, batch, nftTable{fam, "nat"}, refMasqChain(o), "POSTROUTING"))
		}
	}
	if len(errs) > 0 {
		return types.Errorf(types.ErrIO, "%s: reading the reference plugins' rules: %v", o, errs)
	}
	return nil
}

// refDeleteRules deletes the rules of a chain that match, by handle.
func refDeleteRules(conn *nlConn, batch *nlBatch, t nftTable, chain string, match func(nlRule) bool) error {
	rules, err := conn.rules(byte(familyOf[t.family]), t.name, chain)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if match(r) {
			batch.delRule(t, chain, r.handle)
		}
	}
	return nil
}

// refSpoofCheck removes the reference spoof check of the attachment (table
// bridge nat, chains cni-br-iface-<cid>-<ifname> and its -mac chain, the
// jump from PREROUTING commented macspoofchk-<cid>-<ifname>).
func refSpoofCheck(conn *nlConn, batch *nlBatch, o Owner) error {
	ref := o.ContainerID + "-" + o.IfName
	t := nftTable{"bridge", "nat"}
	chain := "cni-br-iface-" + ref
	ok, err := conn.chainExists(byte(familyOf[t.family]), t.name, chain)
	if err != nil || !ok {
		return err
	}
	if err := refDeleteRules(conn, batch, t, "PREROUTING", func(r nlRule) bool {
		return r.comment == "macspoofchk-"+ref || r.jump == chain
	}); err != nil {
		return err
	}
	// The iface chain jumps to the mac chain: it goes first.
	for _, c := range []string{chain, chain + "-mac"} {
		if ok, err := conn.chainExists(byte(familyOf[t.family]), t.name, c); err != nil {
			return err
		} else if ok {
			batch.flushChain(t, c)
		}
	}
	for _, c := range []string{chain, chain + "-mac"} {
		if ok, _ := conn.chainExists(byte(familyOf[t.family]), t.name, c); ok {
			batch.delChain(t, c)
		}
	}
	return nil
}

// refChain removes a reference chain of an iptables-nft table and every
// jump to it from parent, when the chain exists.
func refChain(conn *nlConn, batch *nlBatch, t nftTable, chain, parent string) error {
	ok, err := conn.chainExists(byte(familyOf[t.family]), t.name, chain)
	if err != nil || !ok {
		return err
	}
	if err := refDeleteRules(conn, batch, t, parent, func(r nlRule) bool { return r.jump == chain }); err != nil {
		return err
	}
	batch.flushChain(t, chain)
	batch.delChain(t, chain)
	return nil
}

// refMasqChain is the reference bridge's masquerade chain name:
// "CNI-" + sha512(net + id), 28 characters.
func refMasqChain(o Owner) string {
	return ("CNI-" + sha512Hex(o.Network+o.ContainerID))[:28]
}

// refDNChain is the reference portmap's per-container DNAT chain name.
func refDNChain(o Owner) string {
	return ("CNI-DN-" + sha512Hex(o.Network+o.ContainerID))[:28]
}

// refHash16 is the reference nftables masquerade comment hash.
func refHash16(s string) string { return sha512Hex(s)[:16] }
