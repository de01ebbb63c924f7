package nftables

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/isolation"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/spoofcheck"
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
		add(spoofcheck.Chain(o, r.SpoofCheck))
	}
	if r.Isolation != nil {
		for _, c := range isolation.Chains(o, r.Isolation) {
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
	ip, table, _ := familyWords(v4)
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
		host, subnet := fwtypes.HostNet(m.Addr.IP), fwtypes.SubnetOf(&m.Addr)
		text := fmt.Sprintf("%s saddr %s %s daddr != %s %s daddr != %s masquerade",
			ip, host.IP, ip, subnet, ip, multicast)
		exprs := nftchain.Concat(nftchain.MatchAddr(v4, nftchain.SaddrOff(v4), host, expr.CmpOpEq),
			nftchain.MatchAddr(v4, nftchain.DaddrOff(v4), subnet, expr.CmpOpNeq),
			nftchain.MatchAddr(v4, nftchain.DaddrOff(v4), mcast, expr.CmpOpNeq),
			[]expr.Any{&expr.Masq{}})
		c.Rules = append(c.Rules, nftchain.Rule{Text: text, Elem: &nftchain.Elem{Set: "sources", Key: host.IP.String()}, Exprs: exprs})
	}
	return c
}

// dnatChain holds one DNAT rule per mapping of the family.
func dnatChain(o fwtypes.Owner, pm *fwtypes.PortMaps, v4 bool) nftchain.Chain {
	ip, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftchain.Chain{Table: table, Name: nftchain.ChainName(nftchain.PrefixDNAT, o)}
	for _, m := range fwtypes.ForFamily(pm.Mappings, v4) {
		words := append([]string{}, conds...)
		elem := &nftchain.Elem{Set: "ports", Key: fmt.Sprintf("%s . %d", m.Protocol, m.HostPort)}
		var exprs []expr.Any
		if h := m.SpecificHost(); h != nil {
			words = append(words, ip+" daddr "+h.String())
			elem = &nftchain.Elem{Set: "hostip_ports", Key: fmt.Sprintf("%s . %s . %d", h, m.Protocol, m.HostPort)}
			exprs = nftchain.MatchAddr(v4, nftchain.DaddrOff(v4), fwtypes.HostNet(h), expr.CmpOpEq)
		}
		words = append(words, fmt.Sprintf("%s dport %d dnat to %s", m.Protocol, m.HostPort,
			fwtypes.JoinHostPort(cip.IP, m.ContainerPort)))
		exprs = append(exprs, nftchain.Concat(exprDport(m.Protocol, m.HostPort), exprDNAT(v4, cip.IP, m.ContainerPort))...)
		if len(conds) > 0 {
			exprs = nil // user tokens: only nft can build them
		}
		c.Rules = append(c.Rules, nftchain.Rule{Text: strings.Join(words, " "), Elem: elem, Exprs: exprs})
	}
	return c
}

// hairpinChain masquerades DNATed connections to the container that come
// from the container's own subnet (hairpin), from 127.0.0.1 (IPv4), or from
// anywhere with MasqAll. Postrouting reaches it through the map keyed by
// container address, protocol and container port, behind "ct status dnat".
func hairpinChain(o fwtypes.Owner, pm *fwtypes.PortMaps, v4 bool) nftchain.Chain {
	ip, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftchain.Chain{Table: table, Name: nftchain.ChainName(nftchain.PrefixHairpin, o)}
	if !pm.SNAT {
		return c
	}
	subnet := fwtypes.SubnetOf(cip)
	sources := []string{ip + " saddr " + subnet.String()}
	matches := [][]expr.Any{nftchain.MatchAddr(v4, nftchain.SaddrOff(v4), subnet, expr.CmpOpEq)}
	switch {
	case pm.MasqAll:
		sources, matches = []string{""}, [][]expr.Any{{}}
	case v4:
		sources = append(sources, "ip saddr 127.0.0.1")
		matches = append(matches, nftchain.MatchAddr(v4, nftchain.SaddrOff(v4), fwtypes.HostNet(net.IPv4(127, 0, 0, 1)), expr.CmpOpEq))
	}
	seen := map[string]bool{}
	for _, m := range fwtypes.ForFamily(pm.Mappings, v4) {
		key := fmt.Sprintf("%s . %s . %d", fwtypes.HostNet(cip.IP).IP, m.Protocol, m.ContainerPort)
		if seen[key] {
			continue
		}
		seen[key] = true
		elem := &nftchain.Elem{Set: "hairpins", Key: key}
		for i, src := range sources {
			words := append(append([]string{}, conds...), src, "meta l4proto "+m.Protocol+" masquerade")
			exprs := nftchain.Concat(matches[i], exprL4Proto(m.Protocol), []expr.Any{&expr.Masq{}})
			if len(conds) > 0 {
				exprs = nil
			}
			c.Rules = append(c.Rules, nftchain.Rule{Text: strings.Join(nonEmpty(words), " "), Elem: elem, Exprs: exprs})
		}
	}
	return c
}

func nonEmpty(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}
