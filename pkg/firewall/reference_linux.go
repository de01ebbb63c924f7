package firewall

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/nftables"
)

// removeReference deletes what the reference plugins wrote for the same
// attachment, found over netlink so that the common case (nothing there)
// costs a few netlink requests and no process:
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
// left alone.
func removeReference(ctx context.Context, o Owner, runNFT func(context.Context, string) error) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netlink to nftables: %w", err)
	}
	var script []string
	var errs []error
	switch o.Plugin {
	case PluginPortmap:
		for _, fam := range []string{"ip", "ip6"} {
			for _, ch := range []string{"hostports", "hostip_hostports", "masquerading"} {
				script = append(script, refDeleteRules(fam, "cni_hostport", ch, func(c string) bool {
					return c == o.ContainerID
				})...)
			}
			errs = append(errs, refIPTables(ctx, conn, fam, refDNChain(o), "CNI-HOSTPORT-DNAT"))
		}
	case PluginBridge:
		prefix := refHash16(o.Network) + "-" + refHash16(o.IfName+":"+o.ContainerID)
		script = append(script, refDeleteRules("inet", "cni_plugins_masquerade", "masq_checks", func(c string) bool {
			return strings.HasPrefix(c, prefix)
		})...)
		script = append(script, refSpoofCheck(conn, o)...)
		for _, fam := range []string{"ip", "ip6"} {
			errs = append(errs, refIPTables(ctx, conn, fam, refMasqChain(o), "POSTROUTING"))
		}
	}
	if len(script) > 0 {
		errs = append(errs, runNFT(ctx, strings.Join(script, "\n")+"\n"))
	}
	return errors.Join(errs...)
}

// refDeleteRules returns delete commands for the rules of a chain whose
// comment matches.
func refDeleteRules(family, table, chain string, match func(string) bool) []string {
	rules, err := nlListRules(byte(familyOf[family]), table, chain)
	if err != nil {
		return nil // nothing of the reference can be read here
	}
	var out []string
	for _, r := range rules {
		if match(r.comment) {
			out = append(out, fmt.Sprintf("delete rule %s %s %s handle %d", family, table, chain, r.handle))
		}
	}
	return out
}

// refSpoofCheck returns the commands removing the reference spoof check of
// the attachment (table bridge nat, chains cni-br-iface-<cid>-<ifname>).
func refSpoofCheck(conn *nftables.Conn, o Owner) []string {
	ref := o.ContainerID + "-" + o.IfName
	chain := "cni-br-iface-" + ref
	t := &nftables.Table{Name: "nat", Family: nftables.TableFamilyBridge}
	if _, err := conn.ListChain(t, chain); err != nil {
		return nil
	}
	out := refDeleteRules("bridge", "nat", "PREROUTING", func(c string) bool {
		return c == "macspoofchk-"+ref
	})
	for _, c := range []string{chain, chain + "-mac"} {
		out = append(out, "add chain bridge nat "+c, "flush chain bridge nat "+c)
	}
	return append(out, "delete chain bridge nat "+chain, "delete chain bridge nat "+chain+"-mac")
}

// refIPTables removes a reference iptables chain of table nat and every
// jump to it from parent, when iptables-nft shows the chain over netlink.
func refIPTables(ctx context.Context, conn *nftables.Conn, family, chain, parent string) error {
	t := &nftables.Table{Name: "nat", Family: familyOf[family]}
	if _, err := conn.ListChain(t, chain); err != nil {
		return nil // no such chain, or no nat table at all
	}
	ipt := iptFor(family == "ip")
	listing, err := ipt.list(ctx, parent)
	if err != nil {
		return err
	}
	payload := []string{"*nat"}
	for _, line := range listing {
		if strings.HasPrefix(line, "-A "+parent+" ") && strings.Contains(line+" ", " -j "+chain+" ") {
			payload = append(payload, "-D"+strings.TrimPrefix(line, "-A"))
		}
	}
	payload = append(payload, "-F "+chain, "-X "+chain, "COMMIT")
	return ipt.restore(ctx, strings.Join(payload, "\n")+"\n")
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
