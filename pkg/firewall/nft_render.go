package firewall

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/google/nftables/expr"
)

// nftTable is one table of ours.
type nftTable struct{ family, name string }

func (t nftTable) String() string { return t.family + " " + t.name }

// Our tables. None clashes with a reference plugin's table.
var (
	nftMasq4  = nftTable{"ip", "cnisuite_masq"}
	nftMasq6  = nftTable{"ip6", "cnisuite_masq"}
	nftPort4  = nftTable{"ip", "cnisuite_portmap"}
	nftPort6  = nftTable{"ip6", "cnisuite_portmap"}
	nftSpoof  = nftTable{"bridge", "cnisuite_spoofcheck"}
	nftTables = []nftTable{nftMasq4, nftMasq6, nftPort4, nftPort6, nftSpoof}
)

// Owner chain prefixes, one per kind of rule.
const (
	nftPrefixMasq    = "mq"  // bridge masquerade, in cnisuite_masq
	nftPrefixDNAT    = "pm"  // portmap DNAT, in cnisuite_portmap
	nftPrefixHairpin = "pmq" // portmap masquerade, in cnisuite_portmap
	nftPrefixSpoof   = "sc"  // spoof check, in cnisuite_spoofcheck
)

// nftCommentTag starts the comment of every rule we write.
const nftCommentTag = "cnisuite"

// nftChain is an owner chain with the rules it must hold.
type nftChain struct {
	table nftTable
	name  string
	rules []nftRule
}

// nftRule is a rule of an owner chain; elem, when set, is the map element
// that dispatches packets to the chain for this rule.
type nftRule struct {
	text  string
	elem  *nftElem
	exprs []expr.Any // the kernel form of text; nil when only nft can build it
}

// nftElem is a key of a verdict map of the table.
type nftElem struct{ set, key string }

// comment returns the rule's comment: a digest of what the rule does and
// the map element it needs, so that Remove finds the element again.
func (r nftRule) comment() string {
	sum := sha256.Sum256([]byte(r.text))
	c := nftCommentTag + " " + hex.EncodeToString(sum[:4])
	if r.elem != nil {
		// nft strings cannot hold quotes: an interface key goes bare.
		c += " " + r.elem.set + ":" + strings.Trim(r.elem.key, `"`)
	}
	return c
}

// parseNFTComment extracts the element of a comment we wrote; ok is false
// for a comment that is not ours.
func parseNFTComment(c string) (digest string, elem *nftElem, ok bool) {
	fields := strings.SplitN(c, " ", 3)
	if len(fields) < 2 || fields[0] != nftCommentTag {
		return "", nil, false
	}
	if len(fields) == 3 {
		set, key, found := strings.Cut(fields[2], ":")
		if !found {
			return "", nil, false
		}
		if set == "ifaces" {
			key = `"` + key + `"`
		}
		elem = &nftElem{set: set, key: key}
	}
	return fields[1], elem, true
}

// nftChainName returns the name of an owner chain of the given kind.
func nftChainName(prefix string, o Owner) string {
	return prefix + "-" + o.netHash()[:8] + "-" + o.hash()[:16]
}

// nftNetPrefix returns the common start of the names of a network's chains.
func nftNetPrefix(prefix, plugin, network string) string {
	return prefix + "-" + Owner{Plugin: plugin, Network: network}.netHash()[:8] + "-"
}

// nftOwnerChains lists every chain an owner may have, whatever its rules.
func nftOwnerChains(o Owner) []nftChain {
	return []nftChain{
		{table: nftMasq4, name: nftChainName(nftPrefixMasq, o)},
		{table: nftMasq6, name: nftChainName(nftPrefixMasq, o)},
		{table: nftPort4, name: nftChainName(nftPrefixDNAT, o)},
		{table: nftPort4, name: nftChainName(nftPrefixHairpin, o)},
		{table: nftPort6, name: nftChainName(nftPrefixDNAT, o)},
		{table: nftPort6, name: nftChainName(nftPrefixHairpin, o)},
		{table: nftSpoof, name: nftChainName(nftPrefixSpoof, o)},
	}
}

// nftDesired returns the owner chains r needs, in a stable order.
func nftDesired(o Owner, r Rules) []nftChain {
	var out []nftChain
	add := func(c nftChain) {
		if len(c.rules) > 0 {
			out = append(out, c)
		}
	}
	add(nftMasqChain(o, r.Masq, true))
	add(nftMasqChain(o, r.Masq, false))
	if pm := r.PortMaps; pm != nil {
		if pm.ContainerV4 != nil {
			add(nftDNATChain(o, pm, true))
			add(nftHairpinChain(o, pm, true))
		}
		if pm.ContainerV6 != nil {
			add(nftDNATChain(o, pm, false))
			add(nftHairpinChain(o, pm, false))
		}
	}
	if r.SpoofCheck != nil {
		add(nftSpoofChain(o, r.SpoofCheck))
	}
	return out
}

func familyWords(v4 bool) (ip string, t4, t6 nftTable) {
	if v4 {
		return "ip", nftMasq4, nftPort4
	}
	return "ip6", nftMasq6, nftPort6
}

// nftMasqChain masquerades each container address of one family.
func nftMasqChain(o Owner, ms []Masq, v4 bool) nftChain {
	ip, table, _ := familyWords(v4)
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	_, mcast, _ := net.ParseCIDR(multicast)
	c := nftChain{table: table, name: nftChainName(nftPrefixMasq, o)}
	for _, m := range ms {
		if isV4(m.Addr.IP) != v4 {
			continue
		}
		host := hostNet(m.Addr.IP)
		text := fmt.Sprintf("%s saddr %s %s daddr != %s %s daddr != %s masquerade",
			ip, host.IP, ip, subnetOf(&m.Addr), ip, multicast)
		exprs := concat(exprAddr(v4, saddrOff(v4), host, expr.CmpOpEq),
			exprAddr(v4, daddrOff(v4), subnetOf(&m.Addr), expr.CmpOpNeq),
			exprAddr(v4, daddrOff(v4), mcast, expr.CmpOpNeq),
			[]expr.Any{&expr.Masq{}})
		c.rules = append(c.rules, nftRule{text: text, elem: &nftElem{set: "sources", key: host.IP.String()}, exprs: exprs})
	}
	return c
}

// nftDNATChain holds one DNAT rule per mapping of the family.
func nftDNATChain(o Owner, pm *PortMaps, v4 bool) nftChain {
	ip, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftChain{table: table, name: nftChainName(nftPrefixDNAT, o)}
	for _, m := range forFamily(pm.Mappings, v4) {
		words := append([]string{}, conds...)
		elem := &nftElem{set: "ports", key: fmt.Sprintf("%s . %d", m.Protocol, m.HostPort)}
		var exprs []expr.Any
		if h := specificHost(m); h != nil {
			words = append(words, ip+" daddr "+h.String())
			elem = &nftElem{set: "hostip_ports", key: fmt.Sprintf("%s . %s . %d", h, m.Protocol, m.HostPort)}
			exprs = exprAddr(v4, daddrOff(v4), hostNet(h), expr.CmpOpEq)
		}
		words = append(words, fmt.Sprintf("%s dport %d dnat to %s", m.Protocol, m.HostPort,
			joinHostPort(cip.IP, m.ContainerPort)))
		exprs = append(exprs, concat(exprDport(m.Protocol, m.HostPort), exprDNAT(v4, cip.IP, m.ContainerPort))...)
		if len(conds) > 0 {
			exprs = nil // user tokens: only nft can build them
		}
		c.rules = append(c.rules, nftRule{text: strings.Join(words, " "), elem: elem, exprs: exprs})
	}
	return c
}

// nftHairpinChain masquerades DNATed connections to the container that
// come from the container's own subnet (hairpin), from 127.0.0.1 (IPv4),
// or from anywhere with MasqAll. Postrouting reaches it through the map
// keyed by container address, protocol and container port, behind
// "ct status dnat".
func nftHairpinChain(o Owner, pm *PortMaps, v4 bool) nftChain {
	ip, _, table := familyWords(v4)
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	c := nftChain{table: table, name: nftChainName(nftPrefixHairpin, o)}
	if !pm.SNAT {
		return c
	}
	sources := []string{ip + " saddr " + subnetOf(cip).String()}
	matches := [][]expr.Any{exprAddr(v4, saddrOff(v4), subnetOf(cip), expr.CmpOpEq)}
	switch {
	case pm.MasqAll:
		sources, matches = []string{""}, [][]expr.Any{{}}
	case v4:
		sources = append(sources, "ip saddr 127.0.0.1")
		matches = append(matches, exprAddr(v4, saddrOff(v4), hostNet(net.IPv4(127, 0, 0, 1)), expr.CmpOpEq))
	}
	seen := map[string]bool{}
	for _, m := range forFamily(pm.Mappings, v4) {
		key := fmt.Sprintf("%s . %s . %d", hostNet(cip.IP).IP, m.Protocol, m.ContainerPort)
		if seen[key] {
			continue
		}
		seen[key] = true
		elem := &nftElem{set: "hairpins", key: key}
		for i, src := range sources {
			words := append(append([]string{}, conds...), src, "meta l4proto "+m.Protocol+" masquerade")
			exprs := concat(matches[i], exprL4Proto(m.Protocol), []expr.Any{&expr.Masq{}})
			if len(conds) > 0 {
				exprs = nil
			}
			c.rules = append(c.rules, nftRule{text: strings.Join(nonEmpty(words), " "), elem: elem, exprs: exprs})
		}
	}
	return c
}

// nftSpoofChain drops frames from the host veth with a foreign source.
func nftSpoofChain(o Owner, sc *SpoofCheck) nftChain {
	c := nftChain{table: nftSpoof, name: nftChainName(nftPrefixSpoof, o)}
	elem := &nftElem{set: "ifaces", key: `"` + sc.HostIface + `"`}
	c.rules = append(c.rules, nftRule{text: "ether saddr != " + sc.MAC.String() + " drop", elem: elem})
	var v4, v6 []string
	for _, ip := range sc.IPs {
		if isV4(ip) {
			v4 = append(v4, ip.String())
		} else {
			v6 = append(v6, ip.String())
		}
	}
	if len(v4) > 0 {
		c.rules = append(c.rules,
			nftRule{text: "ether type ip ip saddr != " + nftSet(v4) + " drop", elem: elem},
			nftRule{text: "ether type arp arp saddr ip != " + nftSet(append(v4, "0.0.0.0")) + " drop", elem: elem})
	}
	if len(v6) > 0 {
		// :: is the source of duplicate address detection; fe80::/10 of
		// neighbour discovery.
		c.rules = append(c.rules, nftRule{text: "ether type ip6 ip6 saddr != " + nftSet(append(v6, "::", "fe80::/10")) + " drop", elem: elem})
	}
	return c
}

func nftSet(items []string) string {
	sorted := append([]string{}, items...)
	sort.Strings(sorted)
	return "{ " + strings.Join(sorted, ", ") + " }"
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

func joinHostPort(ip net.IP, port int) string {
	if isV4(ip) {
		return fmt.Sprintf("%s:%d", ip.To4(), port)
	}
	return fmt.Sprintf("[%s]:%d", ip, port)
}

// needsLocalnetGuard reports whether r lets 127.0.0.1 reach a container.
func needsLocalnetGuard(r Rules) bool {
	pm := r.PortMaps
	return pm != nil && pm.SNAT && !pm.MasqAll && pm.ContainerV4 != nil && len(forFamily(pm.Mappings, true)) > 0
}
