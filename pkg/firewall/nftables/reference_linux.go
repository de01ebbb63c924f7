package nftables

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

type table = netfilter.Table

// DeleteReference adds to batch the deletion of what the reference plugins
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
func DeleteReference(conn *netfilter.Conn, o fwapi.Owner, batch *netfilter.Batch) error {
	var errs []error
	collect := func(err error) { errs = append(errs, err) }
	switch o.Plugin {
	case fwapi.PluginPortmap:
		for _, fam := range []string{"ip", "ip6"} {
			for _, ch := range []string{"hostports", "hostip_hostports", "masquerading"} {
				collect(refDeleteRules(conn, batch, table{Family: fam, Name: "cni_hostport"}, ch, func(r netfilter.Rule) bool {
					return r.Comment == o.ContainerID
				}))
			}
			collect(refChain(conn, batch, table{Family: fam, Name: "nat"}, refDNChain(o), "CNI-HOSTPORT-DNAT"))
		}
	case fwapi.PluginBridge:
		prefix := refHash16(o.Network) + "-" + refHash16(o.IfName+":"+o.ContainerID)
		collect(refDeleteRules(conn, batch, table{Family: "inet", Name: "cni_plugins_masquerade"}, "masq_checks", func(r netfilter.Rule) bool {
			return strings.HasPrefix(r.Comment, prefix)
		}))
		collect(refSpoofCheck(conn, batch, o))
		for _, fam := range []string{"ip", "ip6"} {
			collect(refChain(conn, batch, table{Family: fam, Name: "nat"}, refMasqChain(o), "POSTROUTING"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return types.Errorf(types.ErrIO, "%s: reading the reference plugins' rules: %w", o, err)
	}
	return nil
}

// refDeleteRules deletes the rules of a chain that match, by handle.
func refDeleteRules(conn *netfilter.Conn, batch *netfilter.Batch, t table, chain string, match func(netfilter.Rule) bool) error {
	rules, err := conn.Rules(t.Proto(), t.Name, chain)
	if err != nil {
		return fmt.Errorf("%s %s: %w", t, chain, err)
	}
	for _, r := range rules {
		if match(r) {
			batch.DelRule(t, chain, r.Handle)
		}
	}
	return nil
}

// refSpoofCheck removes the reference spoof check of the attachment (table
// bridge nat, chains cni-br-iface-<cid>-<ifname> and its -mac chain, the
// jump from PREROUTING commented macspoofchk-<cid>-<ifname>).
func refSpoofCheck(conn *netfilter.Conn, batch *netfilter.Batch, o fwapi.Owner) error {
	ref := o.ContainerID + "-" + o.IfName
	t := table{Family: "bridge", Name: "nat"}
	chain := "cni-br-iface-" + ref
	ok, err := conn.ChainExists(t.Proto(), t.Name, chain)
	if err != nil || !ok {
		return err
	}
	if err := refDeleteRules(conn, batch, t, "PREROUTING", func(r netfilter.Rule) bool {
		return r.Comment == "macspoofchk-"+ref || r.Jump == chain
	}); err != nil {
		return err
	}
	// The iface chain jumps to the mac chain: it goes first.
	var present []string
	for _, c := range []string{chain, chain + "-mac"} {
		ok, err := conn.ChainExists(t.Proto(), t.Name, c)
		if err != nil {
			return fmt.Errorf("%s %s: %w", t, c, err)
		}
		if ok {
			present = append(present, c)
			batch.FlushChain(t, c)
		}
	}
	for _, c := range present {
		batch.DelChain(t, c)
	}
	return nil
}

// refChain removes a reference chain of an iptables-nft table and every
// jump to it from parent, when the chain exists.
func refChain(conn *netfilter.Conn, batch *netfilter.Batch, t table, chain, parent string) error {
	ok, err := conn.ChainExists(t.Proto(), t.Name, chain)
	if err != nil || !ok {
		return err
	}
	if err := refDeleteRules(conn, batch, t, parent, func(r netfilter.Rule) bool { return r.Jump == chain }); err != nil {
		return err
	}
	batch.FlushChain(t, chain)
	batch.DelChain(t, chain)
	return nil
}

// refMasqChain is the reference bridge's masquerade chain name:
// "CNI-" + sha512(net + id), 28 characters.
func refMasqChain(o fwapi.Owner) string {
	return ("CNI-" + sha512Hex(o.Network+o.ContainerID))[:28]
}

// refDNChain is the reference portmap's per-container DNAT chain name.
func refDNChain(o fwapi.Owner) string {
	return ("CNI-DN-" + sha512Hex(o.Network+o.ContainerID))[:28]
}

// refHash16 is the reference nftables masquerade comment hash.
func refHash16(s string) string { return sha512Hex(s)[:16] }

func sha512Hex(s string) string {
	sum := sha512.Sum512([]byte(s))
	return hex.EncodeToString(sum[:])
}
