package nftables

import (
	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// spoofSkeleton returns the table's maps and base chain: every frame entering
// the bridge goes through the map of host interfaces, before anything else
// (priority -300).
func spoofSkeleton() nftmodel.Skeleton {
	return nftmodel.Skeleton{Table: nftmodel.Spoof, Maps: []nftmodel.Map{nftmodel.Maps["ifaces"]}, Chains: []nftmodel.Base{{
		Name: "prerouting", Hook: nftmodel.HookPrerouting("filter", -300, "-300"),
		Rules: []nftmodel.Rule{nftmodel.Build(nil,
			nftrule.VmapOf("iifname", "ifaces", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftrule.Reg1}))},
	}}}
}

// spoofCheck returns the owner chain that drops frames from the host veth with
// a foreign source: one rule for the MAC, and per family present in IPs
// one for the IP source (and ARP's sender address with IPv4), each
// against an anonymous set.
func spoofCheck(o fwapi.Owner, sc *fwapi.SpoofCheck) nftmodel.Chain {
	c := nftmodel.Chain{Table: nftmodel.Spoof, Name: nftmodel.ChainName(nftmodel.PrefixSpoof, o)}
	elem := &nftmodel.Elem{Set: "ifaces", Key: `"` + sc.HostIface + `"`}
	c.Rules = append(c.Rules, nftmodel.Build(elem, nftrule.EtherSaddr(sc.MAC, true), nftrule.Drop))
	var v4, v6 []string
	for _, ip := range sc.IPs {
		if fwapi.IsV4(ip) {
			v4 = append(v4, ip.String())
		} else {
			v6 = append(v6, ip.String())
		}
	}
	if len(v4) > 0 {
		c.Rules = append(c.Rules,
			nftmodel.Build(elem, nftrule.EtherType("ip"),
				nftrule.NotIn("ip saddr", nftrule.Set{Type: "ipv4_addr", Items: v4}, nftrule.LoadNH(12, 4, nftrule.Reg1)), nftrule.Drop),
			nftmodel.Build(elem, nftrule.EtherType("arp"),
				nftrule.NotIn("arp saddr ip", nftrule.Set{Type: "ipv4_addr", Items: append(v4, "0.0.0.0")}, nftrule.LoadNH(14, 4, nftrule.Reg1)), nftrule.Drop))
	}
	if len(v6) > 0 {
		// :: is the source of duplicate address detection; fe80::/10 of
		// neighbour discovery.
		c.Rules = append(c.Rules, nftmodel.Build(elem, nftrule.EtherType("ip6"),
			nftrule.NotIn("ip6 saddr", nftrule.Set{Type: "ipv6_addr", Items: append(v6, "::", "fe80::/10")}, nftrule.LoadNH(8, 16, nftrule.Reg1)), nftrule.Drop))
	}
	return c
}
