package nftables

import (
	"fmt"
	"strings"

	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
)

// Chains returns the owner chains r needs, in a stable order. Masquerade
// and port mappings are elements of the skeleton's data maps and sets,
// recorded in ledger chains (nftmodel.Ledger); port mappings with user
// conditions, which no fixed rule can hold, keep a chain of rules per owner
// behind verdict maps (legacy.go), as spoof checks and isolation do.
func Chains(o fwapi.Owner, r fwapi.Rules) []nftmodel.Chain {
	return chains(o, r, false)
}

// chains is Chains, or with legacy the layout of every owner before the
// data maps: what attachments made by an earlier version still hold.
func chains(o fwapi.Owner, r fwapi.Rules, legacy bool) []nftmodel.Chain {
	var out []nftmodel.Chain
	add := func(c nftmodel.Chain) {
		if len(c.Rules) > 0 {
			out = append(out, c)
		}
	}
	for _, v4 := range []bool{true, false} {
		if legacy {
			add(legacyMasqChain(o, r.Masq, v4))
		} else {
			add(masqChain(o, r.Masq, v4))
		}
	}
	if pm := r.PortMaps; pm != nil {
		for _, v4 := range []bool{true, false} {
			cip, conds := pm.Family(v4)
			switch {
			case cip == nil:
			case legacy || len(conds) > 0:
				add(dnatChain(o, pm, v4))
				add(hairpinChain(o, pm, v4))
			default:
				add(portChain(o, pm, v4))
				add(hairpinLedger(o, pm, v4))
			}
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

// masqChain records the elements that masquerade (or SNAT to a source)
// each container address of one family: the address in masq (or snat_to),
// and the address with its subnet in masq_local, which the skeleton leaves
// alone (traffic within the subnet and to multicast keeps its source).
func masqChain(o fwapi.Owner, ms []fwapi.Masq, v4 bool) nftmodel.Chain {
	_, table, _ := familyWords(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixMasq, o)}
	for _, m := range ms {
		if fwapi.IsV4(m.Addr.IP) != v4 {
			continue
		}
		host := fwapi.HostNet(m.Addr.IP).IP.String()
		c.Rules = append(c.Rules, nftmodel.Ledger(nftmodel.Elem{Set: "masq_local", Key: host + " . " + fwapi.SubnetOf(&m.Addr).String()}))
		el := nftmodel.Elem{Set: "masq", Key: host}
		if m.Source != nil {
			el = nftmodel.Elem{Set: "snat_to", Key: host, Data: m.Source.String()}
		}
		c.Rules = append(c.Rules, nftmodel.Ledger(el))
	}
	return c
}

// portChain records one element per mapping of the family: the host port
// (with its address, when the mapping names one) mapped to the container's
// address and port, or, for a range, to the container's address alone
// (each port kept as it is).
func portChain(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, _ := pm.Family(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixDNAT, o)}
	for _, m := range fwapi.ForFamily(pm.Mappings, v4) {
		set, key := "port_dnat", fmt.Sprintf("%s . %s", m.Protocol, m.HostPorts())
		data := fmt.Sprintf("%s . %d", cip.IP, m.ContainerPort)
		if m.IsRange() {
			set, data = "range_dnat", cip.IP.String()
		}
		if h := m.SpecificHost(); h != nil {
			set, key = "hostip_"+strings.TrimPrefix(set, "port_"), fwapi.HostNet(h).IP.String()+" . "+key
		}
		c.Rules = append(c.Rules, nftmodel.Ledger(nftmodel.Elem{Set: set, Key: key, Data: data}))
	}
	return c
}

// hairpinLedger records the connections to the container's mapped ports
// that are masqueraded (with SNAT on): from the container's own subnet
// (hairpin), from 127.0.0.1 (IPv4), or from anywhere with MasqAll, as
// elements of hairpin_masq: container address . protocol . container port
// (or range) . source prefix.
func hairpinLedger(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, _ := pm.Family(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixHairpin, o)}
	if !pm.SNAT {
		return c
	}
	sources := []string{fwapi.SubnetOf(cip).String()}
	switch {
	case pm.MasqAll && v4:
		sources = []string{"0.0.0.0/0"}
	case pm.MasqAll:
		sources = []string{"::/0"}
	case v4:
		sources = append(sources, "127.0.0.1")
	}
	for _, el := range hairpinElems(fwapi.HostNet(cip.IP).IP, fwapi.ForFamily(pm.Mappings, v4), false) {
		for _, src := range sources {
			c.Rules = append(c.Rules, nftmodel.Ledger(nftmodel.Elem{Set: "hairpin_masq", Key: el.Key + " . " + src}))
		}
	}
	return c
}
