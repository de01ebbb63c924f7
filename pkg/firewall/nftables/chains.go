package nftables

import (
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// Chains returns the owner chains r needs, in a stable order. Masquerade
// and port mappings are elements of the skeleton's data maps and sets,
// recorded in ledger chains (nftmodel.Ledger); port mappings with user
// conditions, which no fixed rule can hold, keep a chain of rules per owner
// behind verdict maps (legacy.go), as spoof checks and isolation do.
func Chains(o fwapi.Owner, r fwapi.Rules) []nftmodel.Chain {
	var out []nftmodel.Chain
	add := func(c nftmodel.Chain) {
		if len(c.Rules) > 0 {
			out = append(out, c)
		}
	}
	for _, v4 := range []bool{true, false} {
		for _, c := range masqChains(o, r.Masq, v4) {
			add(c)
		}
	}
	if pm := r.PortMaps; pm != nil {
		for _, v4 := range []bool{true, false} {
			cip, conds := pm.Family(v4)
			switch {
			case cip == nil:
			case len(conds) > 0:
				add(dnatChain(o, pm, v4))
				add(hairpinChain(o, pm, v4))
			default:
				add(portChain(o, pm, v4))
				for _, c := range hairpinChains(o, pm, v4) {
					add(c)
				}
			}
		}
	}
	if r.SpoofCheck != nil {
		add(spoofCheck(o, r.SpoofCheck))
	}
	if r.Isolation != nil {
		for _, c := range isolation(o, r.Isolation) {
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

// masqChains record the elements that masquerade (or SNAT to a source)
// each container address of one family: the address in masq (or
// snat_to), in the owner's ledger chain, which also holds the subnet chain
// of each address's subnet, whose element in masq_nets the skeleton leaves
// alone (traffic within the subnet keeps its source, as does multicast).
// The subnet chains come first: the ledger's jumps need them.
func masqChains(o fwapi.Owner, ms []fwapi.Masq, v4 bool) []nftmodel.Chain {
	_, table, _ := familyWords(v4)
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixMasq, o)}
	var out []nftmodel.Chain
	for _, m := range ms {
		if fwapi.IsV4(m.Addr.IP) != v4 {
			continue
		}
		host := fwapi.HostNet(m.Addr.IP).IP.String()
		el := nftmodel.Elem{Set: "masq", Key: host}
		if m.Source != nil {
			el = nftmodel.Elem{Set: "snat_to", Key: host, Data: m.Source.String()}
		}
		c.Rules = append(c.Rules, nftmodel.Ledger(el))
		out = holdSubnet(out, &c, nftmodel.PrefixMasqNet, "masq_nets", fwapi.SubnetOf(&m.Addr))
	}
	return append(out, c)
}

// holdSubnet makes owner jump to the subnet chain of n (adding it to
// shared unless there), whose rule records n's element of set: "n . n",
// a source and a destination both in n.
func holdSubnet(shared []nftmodel.Chain, owner *nftmodel.Chain, prefix, set string, n *net.IPNet) []nftmodel.Chain {
	name := nftmodel.SubnetChainName(prefix, n)
	for _, r := range owner.Rules {
		if r.Text == "jump "+name {
			return shared
		}
	}
	owner.Rules = append(owner.Rules, nftmodel.Build(nil, nftrule.Jump(name)))
	return append(shared, nftmodel.Chain{Table: owner.Table, Name: name,
		Rules: []nftmodel.Rule{nftmodel.Ledger(nftmodel.Elem{Set: set, Key: n.String() + " . " + n.String()})}})
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

// hairpinChains record the connections to the container's mapped ports
// that are masqueraded (with SNAT on): container address . protocol .
// container port in hairpin, which the skeleton masquerades from the
// container's own subnet (its subnet chain's element of hairpin_nets:
// hairpin) and, for IPv4, from 127.0.0.1; with MasqAll in hairpin_all,
// masqueraded from anywhere. A range of container ports is one element of
// the interval set hairpin_masq, with the source prefix as its last field.
func hairpinChains(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) []nftmodel.Chain {
	_, _, table := familyWords(v4)
	cip, _ := pm.Family(v4)
	if !pm.SNAT {
		return nil
	}
	c := nftmodel.Chain{Table: table, Name: nftmodel.ChainName(nftmodel.PrefixHairpin, o)}
	subnet := fwapi.SubnetOf(cip)
	sources, set := []string{subnet.String()}, "hairpin"
	switch {
	case pm.MasqAll && v4:
		sources, set = []string{"0.0.0.0/0"}, "hairpin_all"
	case pm.MasqAll:
		sources, set = []string{"::/0"}, "hairpin_all"
	case v4:
		sources = append(sources, "127.0.0.1")
	}
	var shared []nftmodel.Chain
	for _, el := range hairpinElems(fwapi.HostNet(cip.IP).IP, fwapi.ForFamily(pm.Mappings, v4)) {
		if el.Set == "hairpins" {
			c.Rules = append(c.Rules, nftmodel.Ledger(nftmodel.Elem{Set: set, Key: el.Key}))
			if set == "hairpin" {
				shared = holdSubnet(shared, &c, nftmodel.PrefixHairpinNet, "hairpin_nets", subnet)
			}
			continue
		}
		for _, src := range sources {
			c.Rules = append(c.Rules, nftmodel.Ledger(nftmodel.Elem{Set: "hairpin_masq", Key: el.Key + " . " + src}))
		}
	}
	return append(shared, c)
}
