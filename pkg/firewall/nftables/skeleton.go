package nftables

import (
	"encoding/binary"
	"net"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/isolation"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/spoofcheck"
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
		return isolation.BridgeSkeleton()
	case nftchain.IsoInet:
		return isolation.InetSkeleton()
	}
	switch t.Name {
	case nftchain.Masq4.Name:
		return nftchain.Skeleton{Table: t, Maps: []nftchain.Map{nftchain.Maps["sources"]}, Chains: []nftchain.Base{{
			Name: "postrouting", Hook: nftchain.HookSrcNAT,
			Rules: []nftchain.Rule{{Text: ip + " saddr vmap @sources",
				Exprs: nftchain.Vmap("sources", nftchain.LoadNH(nftchain.SaddrOff(v4), nftchain.AddrLen(v4), nftchain.Reg1))}},
		}}}
	case nftchain.Port4.Name:
		return portSkeleton(t, v4, ip)
	case nftchain.Spoof.Name:
		return spoofcheck.Skeleton()
	}
	return nftchain.Skeleton{Table: t}
}

// portSkeleton is the portmap table: only traffic addressed to the node
// itself (fib daddr type local) reaches the host-port maps.
func portSkeleton(t nftchain.Table, v4 bool, ip string) nftchain.Skeleton {
	toHostports := nftchain.Rule{Text: "fib daddr type local jump hostports", Exprs: []expr.Any{
		&expr.Fib{Register: nftchain.Reg1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftchain.Reg1, Data: hostReg(2)}, // RTN_LOCAL
		&expr.Verdict{Kind: expr.VerdictJump, Chain: "hostports"},
	}}
	ctDNAT := []expr.Any{
		&expr.Ct{Register: nftchain.Reg1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: nftchain.Reg1, DestRegister: nftchain.Reg1, Len: 4, Mask: hostReg(0x20), Xor: hostReg(0)}, // IPS_DST_NAT
		&expr.Cmp{Op: expr.CmpOpNeq, Register: nftchain.Reg1, Data: hostReg(0)},
	}
	return nftchain.Skeleton{
		Table: t,
		Maps:  []nftchain.Map{nftchain.Maps["hostip_ports"], nftchain.Maps["ports"], nftchain.Maps["hairpins"]},
		Chains: []nftchain.Base{
			{Name: "prerouting", Hook: nftchain.HookPrerouting("nat", -100, "dstnat"), Rules: []nftchain.Rule{toHostports}},
			{Name: "output", Hook: nftchain.HookOutputNAT, Rules: []nftchain.Rule{toHostports}},
			{Name: "hostports", Rules: []nftchain.Rule{
				{Text: ip + " daddr . meta l4proto . th dport vmap @hostip_ports", Exprs: nftchain.Vmap("hostip_ports", exprConcatKey(v4, true)...)},
				{Text: "meta l4proto . th dport vmap @ports", Exprs: nftchain.Vmap("ports", exprConcatKey(v4, false)...)},
			}},
			{Name: "masquerading", Hook: nftchain.HookSrcNAT, Rules: []nftchain.Rule{{
				Text:  "ct status dnat " + ip + " daddr . meta l4proto . th dport vmap @hairpins",
				Exprs: append(ctDNAT, nftchain.Vmap("hairpins", exprConcatKey(v4, true)...)...),
			}}},
		},
	}
}

// exprL4Proto: meta l4proto <proto>
func exprL4Proto(proto string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: nftchain.Reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftchain.Reg1, Data: []byte{nftchain.ProtoNumbers[proto]}},
	}
}

// exprDport: <proto> dport <port>
func exprDport(proto string, port int) []expr.Any {
	return append(exprL4Proto(proto),
		&expr.Payload{DestRegister: nftchain.Reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftchain.Reg1, Data: binary.BigEndian.AppendUint16(nil, uint16(port))})
}

// exprDNAT: dnat to <ip>:<port>
func exprDNAT(v4 bool, ip net.IP, port int) []expr.Any {
	family := uint32(10) // NFPROTO_IPV6
	if v4 {
		family = 2 // NFPROTO_IPV4
	}
	return []expr.Any{
		&expr.Immediate{Register: nftchain.Reg1, Data: nftchain.FamIP(v4, ip)},
		&expr.Immediate{Register: nftchain.Reg2, Data: binary.BigEndian.AppendUint16(nil, uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: family, RegAddrMin: nftchain.Reg1, RegProtoMin: nftchain.Reg2, Specified: true},
	}
}

// exprConcatKey loads "<ip> daddr . meta l4proto . th dport" into Reg1
// onwards (without the address when withAddr is false), as nft does.
func exprConcatKey(v4, withAddr bool) []expr.Any {
	protoReg, portReg := uint32(nftchain.Reg1), uint32(nftchain.Reg32x01)
	var out []expr.Any
	if withAddr {
		l := uint32(16)
		protoReg, portReg = nftchain.Reg2, nftchain.Reg32x05
		if v4 {
			l, protoReg, portReg = 4, nftchain.Reg32x01, nftchain.Reg32x02
		}
		out = append(out, nftchain.LoadNH(nftchain.DaddrOff(v4), l, nftchain.Reg1))
	}
	return append(out,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: protoReg},
		&expr.Payload{DestRegister: portReg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
}

// hostReg is a native-endian 32-bit value, as the kernel stores fib
// results and ct status in a register.
func hostReg(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
