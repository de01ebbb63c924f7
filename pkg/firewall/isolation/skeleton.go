package isolation

import (
	"encoding/binary"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
)

// Skeletons returns both tables' maps and base chains.
func Skeletons() []nftchain.Skeleton { return []nftchain.Skeleton{BridgeSkeleton(), InetSkeleton()} }

// BridgeSkeleton: every frame the bridge forwards from one port to another
// goes through the map of icc-off ports it came from.
func BridgeSkeleton() nftchain.Skeleton {
	return nftchain.Skeleton{
		Table: nftchain.IsoBridge,
		Maps:  []nftchain.Map{nftchain.Maps["icc_from"], nftchain.Maps["icc_to"]},
		Chains: []nftchain.Base{{
			Name: "forward",
			Hook: &nftchain.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: -200},
				Text: "type filter hook forward priority -200; policy accept;"},
			Rules: []nftchain.Rule{{Text: "iifname vmap @icc_from",
				Exprs: nftrule.Vmap("icc_from", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftrule.Reg1})}},
		}},
	}
}

// InetSkeleton: forwarded packets, replies and port mappings accepted
// first, then dispatched by destination address (icc) and by the bridge
// they leave or enter (isolate).
func InetSkeleton() nftchain.Skeleton {
	return nftchain.Skeleton{
		Table: nftchain.IsoInet,
		Maps: []nftchain.Map{nftchain.Maps["icc_addrs4"], nftchain.Maps["icc_addrs6"],
			nftchain.Maps["iso_from"], nftchain.Maps["iso_to"], nftchain.Maps["iso_into"]},
		Chains: []nftchain.Base{{
			Name: "forward",
			Hook: &nftchain.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: 0},
				Text: "type filter hook forward priority 0; policy accept;"},
			Rules: []nftchain.Rule{
				{Text: "ct state established,related accept", Exprs: ctBits(expr.CtKeySTATE, 0x2|0x4)},
				{Text: "ct status dnat accept", Exprs: ctBits(expr.CtKeySTATUS, 0x20)},
				{Text: "ip daddr vmap @icc_addrs4", Exprs: daddrVmap(true, "icc_addrs4")},
				{Text: "ip6 daddr vmap @icc_addrs6", Exprs: daddrVmap(false, "icc_addrs6")},
				{Text: "iifname vmap @iso_from",
					Exprs: nftrule.Vmap("iso_from", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftrule.Reg1})},
				{Text: "oifname vmap @iso_into",
					Exprs: nftrule.Vmap("iso_into", &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: nftrule.Reg1})},
			},
		}},
	}
}

// ctBits: ct <key> <bits> accept (state established,related; status dnat).
func ctBits(key expr.CtKey, bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: nftrule.Reg1, Key: key},
		&expr.Bitwise{SourceRegister: nftrule.Reg1, DestRegister: nftrule.Reg1, Len: 4, Mask: hostReg(bits), Xor: hostReg(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: nftrule.Reg1, Data: hostReg(0)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
}

// daddrVmap: ip/ip6 daddr vmap @<set>, in an inet table (nft checks the
// protocol first).
func daddrVmap(v4 bool, set string) []expr.Any {
	proto := byte(10) // NFPROTO_IPV6
	if v4 {
		proto = 2 // NFPROTO_IPV4
	}
	return nftrule.Vmap(set,
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: nftrule.Reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftrule.Reg1, Data: []byte{proto}},
		nftrule.LoadNH(nftrule.DaddrOff(v4), nftrule.AddrLen(v4), nftrule.Reg1))
}

// hostReg is a native-endian 32-bit value, as the kernel keeps ct state and
// status in a register.
func hostReg(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
