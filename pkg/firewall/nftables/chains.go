package nftables

import (
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// Chains returns the owner chains r needs, in a stable order.
func Chains(o fwapi.Owner, r fwapi.Rules) []nftmodel.Chain {
	var out []nftmodel.Chain
	add := func(c nftmodel.Chain) {
		if len(c.Rules) > 0 {
			out = append(out, c)
		}
	}
	add(masqChain(o, r.Masq, true))
	add(masqChain(o, r.Masq, false))
	if pm := r.PortMaps; pm != nil {
		if pm.ContainerV4 != nil {
			add(dnatChain(o, pm, true))
			add(hairpinChain(o, pm, true))
		}
		if pm.ContainerV6 != nil {
			add(dnatChain(o, pm, false))
			add(hairpinChain(o, pm, false))
		}
	}
	if r.SpoofCheck != nil {
		add(bridgechains.SpoofCheck(o, r.SpoofCheck))
	}
	if r.Isolation != nil {
		for _, c := range bridgechains.Isolation(o, r.Isolation) {
			add(c)
		}
	}
	return out
}

// Script returns the nft script Ensure writes for an owner with no rules
// yet (the localnet guard aside): the text golden files hold, and the one
// the netlink batch must list identically to.
func Script(o fwapi.Owner, r fwapi.Rules) string {
	desired := Chains(o, r)
	return nftmodel.Script(desired, nil, skeletons(desired), nil)
}

func familyWords(v4 bool) (ip string, masq, port nftmodel.Table) {
	if v4 {
		return "ip", nftmodel.Masq4, nftmodel.Port4
	}
	return "ip6", nftmodel.Masq6, nftmodel.Port6
}

// masqChain masquerades each container address of one family.
func masqChain(o fwapi.Owner, ms []fwapi.Masq, v4 bool) nftmodel.Chain {
	_, table, _ := familyWords(v4)
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	_, mcast, _ := net.ParseCIDR(multicast)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixMasq, o)}
	for _, m := range ms {
		if fwapi.IsV4(m.Addr.IP) != v4 {
			continue
		}
		host := fwapi.HostNet(m.Addr.IP).IP
		verdict := nftrule.Masquerade
		if m.Source != nil {
			verdict = nftrule.SNATTo(v4, m.Source)
		}
		c.Rules = append(c.Rules, nftmodel.Build(&nftmodel.Elem{Set: "sources", Key: host.String()},
			nftrule.Addr(v4, "saddr", host, false),
			nftrule.Prefix(v4, "daddr", fwapi.SubnetOf(&m.Addr), true),
			nftrule.Prefix(v4, "daddr", mcast, true),
			verdict))
	}
	return c
}

// dnatChain holds one DNAT rule per mapping of the family. A range is one
// rule, dispatched to by one interval element, and keeps each port as it
// is.
func dnatChain(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
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
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
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

// hairpinElems returns the hairpin map elements of the mappings, in their
// order: one per container port, and one per range of container ports,
// ranges that overlap (the same ports mapped from two host addresses)
// merged, since interval elements must not overlap.
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
