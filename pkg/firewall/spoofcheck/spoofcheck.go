// Package spoofcheck is the bridge-family MAC and IP spoof check of an
// attachment, whatever backend writes the other rules: iptables has no
// bridge family, so the check is always an nftables chain in table bridge
// cnisuite_spoofcheck, reached through the map ifaces keyed by the host
// end of the container's veth.
//
// The nftables backend writes Chain in the same transaction as its other
// chains; the iptables backend calls Ensure and Check. Removal and GC of
// the chains are nftchain's, with every other chain of the owner.
package spoofcheck

import (
	"sort"
	"strings"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
)

// Skeleton returns the table's maps and base chain: every frame entering
// the bridge goes through the map of host interfaces, before anything else
// (priority -300).
func Skeleton() nftchain.Skeleton {
	return nftchain.Skeleton{Table: nftchain.Spoof, Maps: []nftchain.Map{nftchain.Maps["ifaces"]}, Chains: []nftchain.Base{{
		Name: "prerouting", Hook: nftchain.HookPrerouting("filter", -300, "-300"),
		Rules: []nftchain.Rule{{Text: "iifname vmap @ifaces",
			Exprs: nftchain.Vmap("ifaces", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftchain.Reg1})}},
	}}}
}

// Chain returns the owner chain that drops frames from the host veth with
// a foreign source. Its rules have no kernel form here (only nft builds
// them), so it is always written with `nft -f`.
func Chain(o fwtypes.Owner, sc *fwtypes.SpoofCheck) nftchain.Chain {
	c := nftchain.Chain{Table: nftchain.Spoof, Name: nftchain.ChainName(nftchain.PrefixSpoof, o)}
	elem := &nftchain.Elem{Set: "ifaces", Key: `"` + sc.HostIface + `"`}
	c.Rules = append(c.Rules, nftchain.Rule{Text: "ether saddr != " + sc.MAC.String() + " drop", Elem: elem})
	var v4, v6 []string
	for _, ip := range sc.IPs {
		if fwtypes.IsV4(ip) {
			v4 = append(v4, ip.String())
		} else {
			v6 = append(v6, ip.String())
		}
	}
	if len(v4) > 0 {
		c.Rules = append(c.Rules,
			nftchain.Rule{Text: "ether type ip ip saddr != " + set(v4) + " drop", Elem: elem},
			nftchain.Rule{Text: "ether type arp arp saddr ip != " + set(append(v4, "0.0.0.0")) + " drop", Elem: elem})
	}
	if len(v6) > 0 {
		// :: is the source of duplicate address detection; fe80::/10 of
		// neighbour discovery.
		c.Rules = append(c.Rules, nftchain.Rule{Text: "ether type ip6 ip6 saddr != " + set(append(v6, "::", "fe80::/10")) + " drop", Elem: elem})
	}
	return c
}

func set(items []string) string {
	sorted := append([]string{}, items...)
	sort.Strings(sorted)
	return "{ " + strings.Join(sorted, ", ") + " }"
}
