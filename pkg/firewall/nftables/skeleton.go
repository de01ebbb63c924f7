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
	for _, c := range chains {
		if !seen[c.Table] {
			seen[c.Table] = true
			out = append(out, skeleton(c.Table))
		}
	}
	return out
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
	toHostports := nftmodel.Build(nil, nftrule.FibLocal(), nftrule.Jump("hostports"))
	return nftmodel.Skeleton{
		Table: t,
		Maps:  []nftmodel.Map{nftmodel.Maps["hostip_ports"], nftmodel.Maps["ports"], nftmodel.Maps["hairpins"]},
		Chains: []nftmodel.Base{
			{Name: "prerouting", Hook: nftmodel.HookPrerouting("nat", -100, "dstnat"), Rules: []nftmodel.Rule{toHostports}},
			{Name: "output", Hook: nftmodel.HookOutputNAT, Rules: []nftmodel.Rule{toHostports}},
			{Name: "hostports", Rules: []nftmodel.Rule{
				nftmodel.Build(nil, nftrule.VmapOf(ip+" daddr . meta l4proto . th dport", "hostip_ports", exprConcatKey(v4, true)...)),
				nftmodel.Build(nil, nftrule.VmapOf("meta l4proto . th dport", "ports", exprConcatKey(v4, false)...)),
			}},
			{Name: "masquerading", Hook: nftmodel.HookSrcNAT, Rules: []nftmodel.Rule{nftmodel.Build(nil,
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
