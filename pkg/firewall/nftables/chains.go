package nftables

import (
	"fmt"
	"net"

	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/nftrule"
)

// Chains returns the owner chains r needs, in a stable order.
func Chains(o fwtypes.Owner, r fwtypes.Rules) []nftchain.Chain {
	var out []nftchain.Chain
	add := func(c nftchain.Chain) {
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
func Script(o fwtypes.Owner, r fwtypes.Rules) string {
	desired := Chains(o, r)
	return nftchain.Script(desired, nil, skeletons(desired), nil)
}

func familyWords(v4 bool) (ip string, masq, port nftchain.Table) {
	if v4 {
		return "ip", nftchain.Masq4, nftchain.Port4
	}
	return "ip6", nftchain.Masq6, nftchain.Port6
}

// masqChain masquerades each container address of one family.
func masqChain(o fwtypes.Owner, ms []fwtypes.Masq, v4 bool) nftchain.Chain {
	_, table, _ := familyWords(v4)
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	_, mcast, _ := net.ParseCIDR(multicast)
	c := nftchain.Chain{Table: table, Name: nftchain.ChainName(nftchain.PrefixMasq, o)}
	for _, m := range ms {
		if fwtypes.IsV4(m.Addr.IP) != v4 {
			continue
		}
		host := fwtypes.HostNet(m.Addr.IP).IP
		c.Rules = append(c.Rules, nftchain.Build(&nftchain.Elem{Set: "sources", Key: host.String()},
			nftrule.Addr(v4, "saddr", host, false),
			nftrule.Prefix(v4, "daddr", fwtypes.SubnetOf(&m.Addr), true),
			nftrule.Prefix(v4, "daddr", mcast, true),
			nftrule.Masquerade))
	}
	return c
}

// dnatChain holds one DNAT rule per mapping of the family.
func dnatChain(o fwtypes.Owner, pm *fwtypes.PortMaps, v4 bool) nftchain.Chain {
	_, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftchain.Chain{Table: table, Name: nftchain.ChainName(nftchain.PrefixDNAT, o)}
	for _, m := range fwtypes.ForFamily(pm.Mappings, v4) {
		elem := &nftchain.Elem{Set: "ports", Key: fmt.Sprintf("%s . %d", m.Protocol, m.HostPort)}
		parts := []nftrule.Part{nftrule.Words(conds)}
		if h := m.SpecificHost(); h != nil {
			elem = &nftchain.Elem{Set: "hostip_ports", Key: fmt.Sprintf("%s . %s . %d", h, m.Protocol, m.HostPort)}
			parts = append(parts, nftrule.Addr(v4, "daddr", fwtypes.HostNet(h).IP, false))
		}
		parts = append(parts, nftrule.Dport(m.Protocol, m.HostPort), nftrule.DNATTo(v4, cip.IP, m.ContainerPort))
		c.Rules = append(c.Rules, nftchain.Build(elem, parts...))
	}
	return c
}

// hairpinChain masquerades DNATed connections to the container that come
// from the container's own subnet (hairpin), from 127.0.0.1 (IPv4), or from
// anywhere with MasqAll. Postrouting reaches it through the map keyed by
// container address, protocol and container port, behind "ct status dnat".
func hairpinChain(o fwtypes.Owner, pm *fwtypes.PortMaps, v4 bool) nftchain.Chain {
	_, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftchain.Chain{Table: table, Name: nftchain.ChainName(nftchain.PrefixHairpin, o)}
	if !pm.SNAT {
		return c
	}
	sources := []nftrule.Part{nftrule.Prefix(v4, "saddr", fwtypes.SubnetOf(cip), false)}
	switch {
	case pm.MasqAll:
		sources = []nftrule.Part{nftrule.Words(nil)}
	case v4:
		sources = append(sources, nftrule.Addr(v4, "saddr", net.IPv4(127, 0, 0, 1).To4(), false))
	}
	seen := map[string]bool{}
	for _, m := range fwtypes.ForFamily(pm.Mappings, v4) {
		key := fmt.Sprintf("%s . %s . %d", fwtypes.HostNet(cip.IP).IP, m.Protocol, m.ContainerPort)
		if seen[key] {
			continue
		}
		seen[key] = true
		elem := &nftchain.Elem{Set: "hairpins", Key: key}
		for _, src := range sources {
			c.Rules = append(c.Rules, nftchain.Build(elem, nftrule.Words(conds), src, nftrule.L4Proto(m.Protocol), nftrule.Masquerade))
		}
	}
	return c
}
