package nftables

import (
	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/nftrule"
)

// skeletons returns the skeleton of each table the chains are in, in the
// order the tables first appear.
func skeletons(chains []nftchain.Chain) []nftchain.Skeleton {
	var out []nftchain.Skeleton
	seen := map[nftchain.Table]bool{}
	for _, c := range chains {
		if !seen[c.Table] {
			seen[c.Table] = true
			out = append(out, skeleton(c.Table))
		}
	}
	return out
}

// skeleton returns the skeleton of one of our tables.
func skeleton(t nftchain.Table) nftchain.Skeleton {
	v4 := t.Family == "ip"
	ip := "ip"
	if !v4 {
		ip = "ip6"
	}
	switch t {
	case nftchain.IsoBridge:
		return bridgechains.IsoBridgeSkeleton()
	case nftchain.IsoInet:
		return bridgechains.IsoInetSkeleton()
	}
	switch t.Name {
	case nftchain.Masq4.Name:
		return nftchain.Skeleton{Table: t, Maps: []nftchain.Map{nftchain.Maps["sources"]}, Chains: []nftchain.Base{{
			Name: "postrouting", Hook: nftchain.HookSrcNAT,
			Rules: []nftchain.Rule{nftchain.Build(nil, nftrule.VmapOf(ip+" saddr", "sources",
				nftrule.LoadNH(nftrule.SaddrOff(v4), nftrule.AddrLen(v4), nftrule.Reg1)))},
		}}}
	case nftchain.Port4.Name:
		return portSkeleton(t, v4, ip)
	case nftchain.Spoof.Name:
		return bridgechains.SpoofSkeleton()
	}
	return nftchain.Skeleton{Table: t}
}

// portSkeleton is the portmap table: only traffic addressed to the node
// itself (fib daddr type local) reaches the host-port maps.
func portSkeleton(t nftchain.Table, v4 bool, ip string) nftchain.Skeleton {
	toHostports := nftchain.Build(nil, nftrule.FibLocal(), nftrule.Jump("hostports"))
	return nftchain.Skeleton{
		Table: t,
		Maps:  []nftchain.Map{nftchain.Maps["hostip_ports"], nftchain.Maps["ports"], nftchain.Maps["hairpins"]},
		Chains: []nftchain.Base{
			{Name: "prerouting", Hook: nftchain.HookPrerouting("nat", -100, "dstnat"), Rules: []nftchain.Rule{toHostports}},
			{Name: "output", Hook: nftchain.HookOutputNAT, Rules: []nftchain.Rule{toHostports}},
			{Name: "hostports", Rules: []nftchain.Rule{
				nftchain.Build(nil, nftrule.VmapOf(ip+" daddr . meta l4proto . th dport", "hostip_ports", exprConcatKey(v4, true)...)),
				nftchain.Build(nil, nftrule.VmapOf("meta l4proto . th dport", "ports", exprConcatKey(v4, false)...)),
			}},
			{Name: "masquerading", Hook: nftchain.HookSrcNAT, Rules: []nftchain.Rule{nftchain.Build(nil,
				nftrule.Ct("status", "dnat", 0x20), // IPS_DST_NAT
				nftrule.VmapOf(ip+" daddr . meta l4proto . th dport", "hairpins", exprConcatKey(v4, true)...))}},
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
