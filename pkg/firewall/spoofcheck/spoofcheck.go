// Package spoofcheck is the bridge-family MAC and IP spoof check of an
// attachment, whatever backend writes the other rules: iptables has no
// bridge family, so the check is always an nftables chain in table bridge
// cnisuite_spoofcheck, reached through the map ifaces keyed by the host
// end of the container's veth.
//
// The nftables backend writes Chain in the same transaction as its other
// chains; the iptables backend in one with the isolation (NFTChains), both
// over netlink. Removal and GC of
// the chains are nftchain's, with every other chain of the owner.
package spoofcheck

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

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
// a foreign source: one rule for the MAC, and per family present in IPs
// one for the IP source (and ARP's sender address with IPv4), each
// against an anonymous set.
func Chain(o fwtypes.Owner, sc *fwtypes.SpoofCheck) nftchain.Chain {
	c := nftchain.Chain{Table: nftchain.Spoof, Name: nftchain.ChainName(nftchain.PrefixSpoof, o)}
	elem := &nftchain.Elem{Set: "ifaces", Key: `"` + sc.HostIface + `"`}
	c.Rules = append(c.Rules, nftchain.Rule{Text: "ether saddr != " + sc.MAC.String() + " drop", Elem: elem,
		Exprs: []expr.Any{
			loadLink(6, 6),
			&expr.Cmp{Op: expr.CmpOpNeq, Register: nftchain.Reg1, Data: []byte(sc.MAC)},
			drop(),
		}})
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
			sourceRule("ip", "ip saddr", unix.ETH_P_IP, 12, nftchain.Set{Type: "ipv4_addr", Items: v4}, elem),
			sourceRule("arp", "arp saddr ip", unix.ETH_P_ARP, 14, nftchain.Set{Type: "ipv4_addr", Items: append(v4, "0.0.0.0")}, elem))
	}
	if len(v6) > 0 {
		// :: is the source of duplicate address detection; fe80::/10 of
		// neighbour discovery.
		c.Rules = append(c.Rules, sourceRule("ip6", "ip6 saddr", unix.ETH_P_IPV6, 8, nftchain.Set{Type: "ipv6_addr", Items: append(v6, "::", "fe80::/10")}, elem))
	}
	return c
}

// sourceRule drops frames of an ether type whose source address, at off
// in the network header, is not in set.
// Equivalent to: ether type <etherType> <field> != { … } drop
func sourceRule(etherType, field string, proto uint16, off uint32, set nftchain.Set, elem *nftchain.Elem) nftchain.Rule {
	n := uint32(4)
	if set.Type == "ipv6_addr" {
		n = 16
	}
	match, sets := nftchain.InSet(set, true, 0)
	return nftchain.Rule{
		Text: "ether type " + etherType + " " + field + " != " + set.Text() + " drop", Elem: elem,
		Exprs: nftchain.Concat([]expr.Any{
			loadLink(12, 2),
			&expr.Cmp{Op: expr.CmpOpEq, Register: nftchain.Reg1, Data: []byte{byte(proto >> 8), byte(proto)}},
			nftchain.LoadNH(off, n, nftchain.Reg1),
		}, match, []expr.Any{drop()}),
		Sets: sets,
	}
}

// loadLink loads n bytes at off of the link-layer header into register 1.
func loadLink(off, n uint32) expr.Any {
	return &expr.Payload{DestRegister: nftchain.Reg1, Base: expr.PayloadBaseLLHeader, Offset: off, Len: n}
}

func drop() expr.Any { return &expr.Verdict{Kind: expr.VerdictDrop} }
