package nftables

import (
	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
)

// isolationSkeletons returns both tables' maps and base chains.
func isolationSkeletons() []nftmodel.Skeleton {
	return []nftmodel.Skeleton{isoBridgeSkeleton(), isoInetSkeleton()}
}

// isoBridgeSkeleton: every frame the bridge forwards from one port to another
// goes through the map of icc-off ports it came from.
func isoBridgeSkeleton() nftmodel.Skeleton {
	return nftmodel.Skeleton{
		Table: nftmodel.IsoBridge,
		Maps:  []nftmodel.Map{nftmodel.Maps["icc_from"], nftmodel.Maps["icc_to"]},
		Chains: []nftmodel.Base{{
			Name: "forward",
			Hook: &nftmodel.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: -200},
				Text: "type filter hook forward priority -200; policy accept;"},
			Rules: []nftmodel.Rule{nftmodel.Build(nil, nftrule.VmapOf("iifname", "icc_from", meta(expr.MetaKeyIIFNAME)))},
		}},
	}
}

// isoInetSkeleton: forwarded packets, replies and port mappings accepted
// first, then dispatched by destination address (icc) and by the bridge
// they leave or enter (isolate, ingress filter). A node upgraded from a
// version without the map ingress finds the skeleton not intact and
// rewrites its base chain in the transaction of the next ADD.
func isoInetSkeleton() nftmodel.Skeleton {
	return nftmodel.Skeleton{
		Table: nftmodel.IsoInet,
		Maps: []nftmodel.Map{nftmodel.Maps["icc_addrs4"], nftmodel.Maps["icc_addrs6"],
			nftmodel.Maps["iso_from"], nftmodel.Maps["iso_to"], nftmodel.Maps["iso_into"],
			nftmodel.Maps["ingress"]},
		Chains: []nftmodel.Base{{
			Name: "forward",
			Hook: &nftmodel.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: 0},
				Text: "type filter hook forward priority 0; policy accept;"},
			Rules: []nftmodel.Rule{
				nftmodel.Build(nil, nftrule.Ct("state", "established,related", 0x2|0x4), nftrule.Accept),
				nftmodel.Build(nil, nftrule.Ct("status", "dnat", 0x20), nftrule.Accept), // IPS_DST_NAT
				nftmodel.Build(nil, daddrVmap(true, "icc_addrs4")),
				nftmodel.Build(nil, daddrVmap(false, "icc_addrs6")),
				nftmodel.Build(nil, nftrule.VmapOf("iifname", "iso_from", meta(expr.MetaKeyIIFNAME))),
				nftmodel.Build(nil, nftrule.VmapOf("oifname", "iso_into", meta(expr.MetaKeyOIFNAME))),
				nftmodel.Build(nil, nftrule.VmapOf("oifname", "ingress", meta(expr.MetaKeyOIFNAME))),
			},
		}},
	}
}

// daddrVmap: ip/ip6 daddr vmap @<set>, in an inet table (nft checks the
// protocol first).
func daddrVmap(v4 bool, set string) nftrule.Part {
	word, proto := "ip6", byte(10) // NFPROTO_IPV6
	if v4 {
		word, proto = "ip", 2 // NFPROTO_IPV4
	}
	return nftrule.VmapOf(word+" daddr", set,
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: nftrule.Reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftrule.Reg1, Data: []byte{proto}},
		nftrule.LoadNH(nftrule.DaddrOff(v4), nftrule.AddrLen(v4), nftrule.Reg1))
}

// meta loads an interface name (iifname, oifname) into register 1.
func meta(key expr.MetaKey) expr.Any { return &expr.Meta{Key: key, Register: nftrule.Reg1} }
