package nftables

import (
	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// skeletons returns the skeleton of each table the chains are in, in the
// order the tables first appear.
func skeletons(chains []nftmodel.Chain) []nftmodel.Skeleton {
	var out []nftmodel.Skeleton
	seen := map[nftmodel.Table]bool{}
	ranges := map[nftmodel.Table]bool{}
	for _, c := range chains {
		ranges[c.Table] = ranges[c.Table] || needsRanges(c)
	}
	for _, c := range chains {
		if !seen[c.Table] {
			seen[c.Table] = true
			s := skeleton(c.Table)
			if ranges[c.Table] {
				r := rangeSkeleton(c.Table)
				s.Maps = append(s.Maps, r.Maps...)
				s.Chains = append(s.Chains, r.Chains...)
			}
			out = append(out, s)
		}
	}
	return out
}

// needsRanges reports whether a chain's rules are reached through the
// port-range maps.
func needsRanges(c nftmodel.Chain) bool {
	for _, el := range c.Elems() {
		if nftmodel.Maps[el.Set].Interval {
			return true
		}
	}
	return false
}

// rangeSkeleton is the part of the portmap table that port ranges need:
// interval maps and the chains that look them up. It extends the
// skeleton of single ports, whose maps cannot gain the interval flag
// while running pods' elements are in them, only for an attachment with a
// range, so nodes without ranges keep their tables as they were (and an
// ADD without ranges leaves the range chains alone: it reads only the
// chains of its own skeleton). Its chains have the same hooks and priorities as the single
// ports' chains; the first DNAT of a packet wins, and a range never shares
// a port with another owner's mapping (Ensure refuses the overlap).
func rangeSkeleton(t nftmodel.Table) nftmodel.Skeleton {
	ip := "ip6"
	if t.Family == "ip" {
		ip = "ip"
	}
	return dispatchSkeleton(t, t.Family == "ip", ip, [3]string{"hostip_port_ranges", "port_ranges", "hairpin_ranges"},
		[4]string{"prerouting_ranges", "output_ranges", "hostport_ranges", "masquerading_ranges"})
}

// skeleton returns the skeleton of one of our tables.
func skeleton(t nftmodel.Table) nftmodel.Skeleton {
	v4 := t.Family == "ip"
	ip := "ip"
	if !v4 {
		ip = "ip6"
	}
	switch t {
	case nftmodel.IsoBridge:
		return bridgechains.IsoBridgeSkeleton()
	case nftmodel.IsoInet:
		return bridgechains.IsoInetSkeleton()
	}
	switch t.Name {
	case nftmodel.Masq4.Name:
		return nftmodel.Skeleton{Table: t, Maps: []nftmodel.Map{nftmodel.Maps["sources"]}, Chains: []nftmodel.Base{{
			Name: "postrouting", Hook: nftmodel.HookSrcNAT,
			Rules: []nftmodel.Rule{nftmodel.Build(nil, nftrule.VmapOf(ip+" saddr", "sources",
				nftrule.LoadNH(nftrule.SaddrOff(v4), nftrule.AddrLen(v4), nftrule.Reg1)))},
		}}}
	case nftmodel.Port4.Name:
		return portSkeleton(t, v4, ip)
	case nftmodel.Spoof.Name:
		return bridgechains.SpoofSkeleton()
	}
	return nftmodel.Skeleton{Table: t}
}

// portSkeleton is the portmap table: only traffic addressed to the node
// itself (fib daddr type local) reaches the host-port maps.
func portSkeleton(t nftmodel.Table, v4 bool, ip string) nftmodel.Skeleton {
	return dispatchSkeleton(t, v4, ip, [3]string{"hostip_ports", "ports", "hairpins"},
		[4]string{"prerouting", "output", "hostports", "masquerading"})
}

// dispatchSkeleton is a portmap table's maps (host address and port,
// port, hairpin) and the chains that look them up (prerouting, output,
// host ports, masquerading), by their names.
func dispatchSkeleton(t nftmodel.Table, v4 bool, ip string, maps [3]string, chains [4]string) nftmodel.Skeleton {
	toHostports := nftmodel.Build(nil, nftrule.FibLocal(), nftrule.Jump(chains[2]))
	return nftmodel.Skeleton{
		Table: t,
		Maps:  []nftmodel.Map{nftmodel.Maps[maps[0]], nftmodel.Maps[maps[1]], nftmodel.Maps[maps[2]]},
		Chains: []nftmodel.Base{
			{Name: chains[0], Hook: nftmodel.HookPrerouting("nat", -100, "dstnat"), Rules: []nftmodel.Rule{toHostports}},
			{Name: chains[1], Hook: nftmodel.HookOutputNAT, Rules: []nftmodel.Rule{toHostports}},
			{Name: chains[2], Rules: []nftmodel.Rule{
				nftmodel.Build(nil, nftrule.VmapOf(ip+" daddr . meta l4proto . th dport", maps[0], exprConcatKey(v4, true)...)),
				nftmodel.Build(nil, nftrule.VmapOf("meta l4proto . th dport", maps[1], exprConcatKey(v4, false)...)),
			}},
			{Name: chains[3], Hook: nftmodel.HookSrcNAT, Rules: []nftmodel.Rule{nftmodel.Build(nil,
				nftrule.Ct("status", "dnat", 0x20), // IPS_DST_NAT
				nftrule.VmapOf(ip+" daddr . meta l4proto . th dport", maps[2], exprConcatKey(v4, true)...))}},
		},
	}
}

// exprConcatKey loads "<ip> daddr . meta l4proto . th dport" into Reg1
// onwards (without the address when withAddr is false), as nft does.
func exprConcatKey(v4, withAddr bool) []expr.Any {
	protoReg, portReg := uint32(nftrule.Reg1), uint32(nftrule.Reg32x01)
	var out []expr.Any
	if withAddr {
		l := uint32(16)
		protoReg, portReg = nftrule.Reg2, nftrule.Reg32x05
		if v4 {
			l, protoReg, portReg = 4, nftrule.Reg32x01, nftrule.Reg32x02
		}
		out = append(out, nftrule.LoadNH(nftrule.DaddrOff(v4), l, nftrule.Reg1))
	}
	return append(out,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: protoReg},
		&expr.Payload{DestRegister: portReg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
}
