package nftables

import (
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// The layout of owner chains behind verdict maps, for port mappings with
// user conditions, which no fixed rule of the skeleton can hold: a chain
// of rules per owner, jumped to from the skeleton through an element keyed
// by what a packet carries.

// dnatChain holds one DNAT rule per mapping of the family. A range is one
// rule, dispatched to by one interval element, and keeps each port as it
// is.
func dnatChain(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, conds := pm.Family(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixDNAT, o)}
	for _, m := range fwapi.ForFamily(pm.Mappings, v4) {
		set, hostSet := "ports", "hostip_ports"
		dport, dnat := nftrule.Dport(m.Protocol, m.HostPort), nftrule.DNATTo(v4, cip.IP, m.ContainerPort)
		if m.IsRange() {
			set, hostSet = "port_ranges", "hostip_port_ranges"
			dport, dnat = nftrule.DportRange(m.Protocol, m.HostPort, m.HostLast()), nftrule.DNATAddr(v4, cip.IP)
		}
		elem := &nftmodel.Elem{Set: set, Key: fmt.Sprintf("%s . %s", m.Protocol, m.HostPorts())}
		parts := []nftrule.Part{nftrule.Words(conds)}
		if h := m.SpecificHost(); h != nil {
			elem = &nftmodel.Elem{Set: hostSet, Key: fmt.Sprintf("%s . %s . %s", h, m.Protocol, m.HostPorts())}
			parts = append(parts, nftrule.Addr(v4, "daddr", fwapi.HostNet(h).IP, false))
		}
		parts = append(parts, dport, dnat)
		c.Rules = append(c.Rules, nftmodel.Build(elem, parts...))
	}
	return c
}

// hairpinChain masquerades DNATed connections to the container that come
// from the container's own subnet (hairpin), from 127.0.0.1 (IPv4), or from
// anywhere with MasqAll. Postrouting reaches it through the map keyed by
// container address, protocol and container port, behind "ct status dnat".
func hairpinChain(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, conds := pm.Family(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixHairpin, o)}
	if !pm.SNAT {
		return c
	}
	sources := []nftrule.Part{nftrule.Prefix(v4, "saddr", fwapi.SubnetOf(cip), false)}
	switch {
	case pm.MasqAll:
		sources = []nftrule.Part{nftrule.Words(nil)}
	case v4:
		sources = append(sources, nftrule.Addr(v4, "saddr", net.IPv4(127, 0, 0, 1).To4(), false))
	}
	seen := map[string]bool{}
	for _, el := range hairpinElems(fwapi.HostNet(cip.IP).IP, fwapi.ForFamily(pm.Mappings, v4)) {
		if seen[el.Key] {
			continue
		}
		seen[el.Key] = true
		proto := strings.Split(el.Key, " . ")[1]
		for _, src := range sources {
			c.Rules = append(c.Rules, nftmodel.Build(&el, nftrule.Words(conds), src, nftrule.L4Proto(proto), nftrule.Masquerade))
		}
	}
	return c
}

// hairpinElems returns the hairpin elements of the mappings (container
// address . protocol . port), in their order: one per container port
// (Set "hairpins"), and one per range of container ports ("hairpin_ranges"),
// ranges that overlap (the same ports mapped from two host addresses)
// merged, since interval elements must not overlap. The legacy layout
// writes them as they are; hairpinChains puts their keys in the sets of
// the data-map layout.
func hairpinElems(ip net.IP, ms []fwapi.PortMapping) []nftmodel.Elem {
	var out []nftmodel.Elem
	var ranges []fwapi.PortMapping
	for _, m := range ms {
		if !m.IsRange() {
			out = append(out, nftmodel.Elem{Set: "hairpins", Key: fmt.Sprintf("%s . %s . %d", ip, m.Protocol, m.ContainerPort)})
			continue
		}
		r := fwapi.PortMapping{Protocol: m.Protocol, HostPort: m.ContainerPort, Range: m.Range}
		for i := 0; i < len(ranges); i++ {
			if o := ranges[i]; o.Overlaps(r) {
				first, last := min(o.HostPort, r.HostPort), max(o.HostLast(), r.HostLast())
				r = fwapi.PortMapping{Protocol: r.Protocol, HostPort: first, Range: last - first + 1}
				ranges = append(ranges[:i], ranges[i+1:]...)
				i = -1 // merged: look at the others again
			}
		}
		ranges = append(ranges, r)
	}
	for _, r := range ranges {
		out = append(out, nftmodel.Elem{Set: "hairpin_ranges", Key: fmt.Sprintf("%s . %s . %s", ip, r.Protocol, r.HostPorts())})
	}
	return out
}
