package nftables

import (
	"net"
	"slices"

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
// port-range verdict maps (legacy.go).
func needsRanges(c nftmodel.Chain) bool {
	for _, el := range c.Elems() {
		if m := nftmodel.Maps[el.Set]; m.Interval && m.Verdict() {
			return true
		}
	}
	return false
}

// rangeSkeleton is the part of the portmap table that port ranges with
// user conditions need (legacy.go): interval verdict maps and the chains
// that look them up. It extends the skeleton of single ports, whose maps
// cannot gain the interval flag while running pods' elements are in them,
// only for such an attachment. Its chains have the same hooks and
// priorities as the single ports' chains; the first DNAT of a packet wins,
// and a range never shares a port with another owner's mapping (Ensure
// refuses the overlap).
func rangeSkeleton(t nftmodel.Table) nftmodel.Skeleton {
	return dispatchSkeleton(t, t.Family == "ip", [3]string{"hostip_port_ranges", "port_ranges", "hairpin_ranges"},
		[4]string{"prerouting_ranges", "output_ranges", "hostport_ranges", "masquerading_ranges"})
}

// skeleton returns the skeleton of one of our tables.
func skeleton(t nftmodel.Table) nftmodel.Skeleton {
	v4 := t.Family == "ip"
	switch t {
	case nftmodel.IsoBridge:
		return isoBridgeSkeleton()
	case nftmodel.IsoInet:
		return isoInetSkeleton()
	}
	switch t.Name {
	case nftmodel.Masq4.Name:
		return masqSkeleton(t, v4)
	case nftmodel.Port4.Name:
		return portSkeleton(t, v4)
	case nftmodel.Spoof.Name:
		return spoofSkeleton()
	}
	return nftmodel.Skeleton{Table: t}
}

// masqSkeleton is the masquerade table: a container address in masq is
// masqueraded, one in snat_to gets the source it maps to, unless the
// packet goes to multicast or stays within a subnet (masq_nets: source and
// destination both in one of its prefixes).
func masqSkeleton(t nftmodel.Table, v4 bool) nftmodel.Skeleton {
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	_, mcast, _ := net.ParseCIDR(multicast)
	saddr := nftrule.ConcatKey(v4, false, nftrule.FieldSaddr)
	return nftmodel.Skeleton{Table: t,
		Maps: []nftmodel.Map{nftmodel.Maps["masq_nets"], nftmodel.Maps["masq"], nftmodel.Maps["snat_to"]},
		Chains: []nftmodel.Base{{
			Name: "postrouting", Hook: nftmodel.HookSrcNAT,
			Rules: []nftmodel.Rule{
				nftmodel.Build(nil, nftrule.Prefix(v4, "daddr", mcast, false), nftrule.Return),
				nftmodel.Build(nil, nftrule.InNamed(nftrule.ConcatKey(v4, true, nftrule.FieldSaddr, nftrule.FieldDaddr), "masq_nets"), nftrule.Return),
				nftmodel.Build(nil, nftrule.InNamed(saddr, "masq"), nftrule.Masquerade),
				nftmodel.Build(nil, nftrule.NATMap(false, v4, saddr, "snat_to", false)),
			},
		}}}
}

// portSkeleton is the portmap table: only traffic addressed to the node
// itself (fib daddr type local) reaches the host-port maps. A host port
// in hostip_dnat or port_dnat is translated to the container address and
// port it maps to, one in hostip_range_dnat or range_dnat to the container
// address (the port kept). A DNATed connection is masqueraded when its
// container address, protocol and port are in hairpin_all, or in hairpin
// and it comes from the same subnet (hairpin_nets) or, for IPv4, from
// 127.0.0.1; for a range of ports, when they are in hairpin_masq with a
// prefix holding its source. The verdict
// maps lead to the chains of attachments with user conditions
// (legacy.go).
func portSkeleton(t nftmodel.Table, v4 bool) nftmodel.Skeleton {
	s := dispatchSkeleton(t, v4, [3]string{"hostip_ports", "ports", "hairpins"},
		[4]string{"prerouting", "output", "hostports", "masquerading"})
	for _, m := range []string{"hostip_dnat", "hostip_range_dnat", "port_dnat", "range_dnat", "hairpin", "hairpin_nets", "hairpin_all", "hairpin_masq"} {
		s.Maps = append(s.Maps, nftmodel.Maps[m])
	}
	s.Chains[2].Rules = append(s.Chains[2].Rules,
		nftmodel.Build(nil, nftrule.NATMap(true, v4, nftrule.ConcatKey(v4, false, hostKey...), "hostip_dnat", true)),
		nftmodel.Build(nil, nftrule.NATMap(true, v4, nftrule.ConcatKey(v4, true, hostKey...), "hostip_range_dnat", false)),
		nftmodel.Build(nil, nftrule.NATMap(true, v4, nftrule.ConcatKey(v4, false, portKey...), "port_dnat", true)),
		nftmodel.Build(nil, nftrule.NATMap(true, v4, nftrule.ConcatKey(v4, true, portKey...), "range_dnat", false)))
	dnatted := nftrule.Ct("status", "dnat", 0x20) // IPS_DST_NAT
	hairpin := nftrule.InNamed(nftrule.ConcatKey(v4, false, hostKey...), "hairpin")
	s.Chains[3].Rules = append(s.Chains[3].Rules,
		nftmodel.Build(nil, dnatted, nftrule.InNamed(nftrule.ConcatKey(v4, true, append(slices.Clone(hostKey), nftrule.FieldSaddr)...), "hairpin_masq"), nftrule.Masquerade),
		nftmodel.Build(nil, dnatted, nftrule.InNamed(nftrule.ConcatKey(v4, false, hostKey...), "hairpin_all"), nftrule.Masquerade),
		nftmodel.Build(nil, dnatted, nftrule.InNamed(nftrule.ConcatKey(v4, true, nftrule.FieldSaddr, nftrule.FieldDaddr), "hairpin_nets"), hairpin, nftrule.Masquerade))
	if v4 {
		s.Chains[3].Rules = append(s.Chains[3].Rules,
			nftmodel.Build(nil, dnatted, nftrule.Addr(v4, "saddr", net.IPv4(127, 0, 0, 1).To4(), false), hairpin, nftrule.Masquerade))
	}
	return s
}

// The keys of the host-port maps: with the node's address, and without.
var (
	hostKey = []string{nftrule.FieldDaddr, nftrule.FieldL4Proto, nftrule.FieldDport}
	portKey = []string{nftrule.FieldL4Proto, nftrule.FieldDport}
)

// dispatchSkeleton is a portmap table's maps (host address and port,
// port, hairpin) and the chains that look them up (prerouting, output,
// host ports, masquerading), by their names.
func dispatchSkeleton(t nftmodel.Table, v4 bool, maps [3]string, chains [4]string) nftmodel.Skeleton {
	toHostports := nftmodel.Build(nil, nftrule.FibLocal(), nftrule.Jump(chains[2]))
	return nftmodel.Skeleton{
		Table: t,
		Maps:  []nftmodel.Map{nftmodel.Maps[maps[0]], nftmodel.Maps[maps[1]], nftmodel.Maps[maps[2]]},
		Chains: []nftmodel.Base{
			{Name: chains[0], Hook: nftmodel.HookPrerouting("nat", -100, "dstnat"), Rules: []nftmodel.Rule{toHostports}},
			{Name: chains[1], Hook: nftmodel.HookOutputNAT, Rules: []nftmodel.Rule{toHostports}},
			{Name: chains[2], Rules: []nftmodel.Rule{
				nftmodel.Build(nil, nftrule.VmapKey(nftrule.ConcatKey(v4, false, hostKey...), maps[0])),
				nftmodel.Build(nil, nftrule.VmapKey(nftrule.ConcatKey(v4, false, portKey...), maps[1])),
			}},
			{Name: chains[3], Hook: nftmodel.HookSrcNAT, Rules: []nftmodel.Rule{nftmodel.Build(nil,
				nftrule.Ct("status", "dnat", 0x20), // IPS_DST_NAT
				nftrule.VmapKey(nftrule.ConcatKey(v4, false, hostKey...), maps[2]))}},
		},
	}
}
