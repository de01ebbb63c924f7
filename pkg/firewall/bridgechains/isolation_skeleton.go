package bridgechains

import (
	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
)

// IsolationSkeletons returns both tables' maps and base chains.
func IsolationSkeletons() []nftchain.Skeleton {
	return []nftchain.Skeleton{IsoBridgeSkeleton(), IsoInetSkeleton()}
}

// IsoBridgeSkeleton: every frame the bridge forwards from one port to another
// goes through the map of icc-off ports it came from.
func IsoBridgeSkeleton() nftchain.Skeleton {
	return nftchain.Skeleton{
		Table: nftchain.IsoBridge,
		Maps:  []nftchain.Map{nftchain.Maps["icc_from"], nftchain.Maps["icc_to"]},
		Chains: []nftchain.Base{{
			Name: "forward",
			Hook: &nftchain.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: -200},
				Text: "type filter hook forward priority -200; policy accept;"},
			Rules: []nftchain.Rule{nftchain.Build(nil, nftrule.VmapOf("iifname", "icc_from", meta(expr.MetaKeyIIFNAME)))},
		}},
	}
}

// IsoInetSkeleton: forwarded packets, replies and port mappings accepted
// first, then dispatched by destination address (icc) and by the bridge
// they leave or enter (isolate).
func IsoInetSkeleton() nftchain.Skeleton {
	return nftchain.Skeleton{
		Table: nftchain.IsoInet,
		Maps: []nftchain.Map{nftchain.Maps["icc_addrs4"], nftchain.Maps["icc_addrs6"],
			nftchain.Maps["iso_from"], nftchain.Maps["iso_to"], nftchain.Maps["iso_into"]},
		Chains: []nftchain.Base{{
			Name: "forward",
			Hook: &nftchain.Hook{Hook: netfilter.Hook{Type: "filter", Num: 2, Prio: 0},
				Text: "type filter hook forward priority 0; policy accept;"},
			Rules: []nftchain.Rule{
				nftchain.Build(nil, nftrule.Ct("state", "established,related", 0x2|0x4), nftrule.Accept),
				nftchain.Build(nil, nftrule.Ct("status", "dnat", 0x20), nftrule.Accept), // IPS_DST_NAT
				nftchain.Build(nil, daddrVmap(true, "icc_addrs4")),
				nftchain.Build(nil, daddrVmap(false, "icc_addrs6")),
				nftchain.Build(nil, nftrule.VmapOf("iifname", "iso_from", meta(expr.MetaKeyIIFNAME))),
				nftchain.Build(nil, nftrule.VmapOf("oifname", "iso_into", meta(expr.MetaKeyOIFNAME))),
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
