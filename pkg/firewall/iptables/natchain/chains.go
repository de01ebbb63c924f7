package natchain

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
)

// Owner chain prefixes, all in table nat. Chain names are at most 28
// characters: prefix, 6 hex of the network hash, 14 of the owner hash.
const (
	PrefixMasq    = "CNIS-MQ-" // bridge masquerade, from POSTROUTING
	PrefixDNAT    = "CNIS-DN-" // portmap DNAT, from PREROUTING and OUTPUT
	PrefixHairpin = "CNIS-HM-" // portmap masquerade of marked packets
)

// Parents are the built-in chains that jump to owner chains.
var Parents = []string{"PREROUTING", "OUTPUT", "POSTROUTING"}

// IsParent reports whether name is one of Parents.
func IsParent(name string) bool { return slices.Contains(Parents, name) }

// Chain is an owner chain with its rules.
type Chain struct {
	Name  string
	Rules []Rule
}

// Jump is a rule of a built-in chain (Parent) leading into an owner chain.
type Jump struct {
	Parent string
	Rule   Rule
}

// ChainName returns the name of an owner chain of the given kind.
func ChainName(prefix string, o fwapi.Owner) string {
	return prefix + o.NetHash()[:6] + o.Hash()[:14]
}

// NetPrefixes returns the name prefixes of a network's owner chains.
func NetPrefixes(plugin, network string) []string {
	n := fwapi.Owner{Plugin: plugin, Network: network}.NetHash()[:6]
	return []string{PrefixMasq + n, PrefixDNAT + n, PrefixHairpin + n}
}

// OwnerChains lists every chain an owner may have in one family.
func OwnerChains(o fwapi.Owner) []string {
	return []string{ChainName(PrefixMasq, o), ChainName(PrefixDNAT, o), ChainName(PrefixHairpin, o)}
}

// ProbeChains returns the chains whose state tells what an owner holds: a
// bridge owner's masquerade chain; a portmap owner's DNAT chain, whose
// hairpin chain always exists alongside.
func ProbeChains(o fwapi.Owner) []string {
	if o.Plugin == fwapi.PluginPortmap {
		return []string{ChainName(PrefixDNAT, o)}
	}
	return []string{ChainName(PrefixMasq, o)}
}

// WithCompanions adds the hairpin chain to a portmap owner's existing
// chains (name → sources), since it was created and must be deleted with
// the DNAT chain.
func WithCompanions(o fwapi.Owner, existing map[string][]string) map[string][]string {
	if _, ok := existing[ChainName(PrefixDNAT, o)]; ok {
		existing[ChainName(PrefixHairpin, o)] = nil
	}
	return existing
}

// ParentsOf returns the built-in chains holding the jumps to the chains.
func ParentsOf(chains []string) []string {
	need := map[string]bool{}
	for _, c := range chains {
		if strings.HasPrefix(c, PrefixDNAT) {
			need["PREROUTING"], need["OUTPUT"] = true, true
		} else {
			need["POSTROUTING"] = true
		}
	}
	var out []string
	for _, p := range Parents {
		if need[p] {
			out = append(out, p)
		}
	}
	return out
}

// Desired returns the owner chains r needs in one family.
func Desired(o fwapi.Owner, r fwapi.Rules, v4 bool) []Chain {
	var out []Chain
	if c := masqChain(o, r.Masq, v4); len(c.Rules) > 0 {
		out = append(out, c)
	}
	if pm := r.PortMaps; pm != nil && (v4 && pm.ContainerV4 != nil || !v4 && pm.ContainerV6 != nil) {
		out = append(out, dnatChain(o, pm, v4), hairpinChain(o, pm))
	}
	return out
}

// HasConditions reports whether the user's free-form iptables conditions
// apply to the family.
func HasConditions(r fwapi.Rules, v4 bool) bool {
	if r.PortMaps == nil {
		return false
	}
	if v4 {
		return len(r.PortMaps.ConditionsV4) > 0
	}
	return len(r.PortMaps.ConditionsV6) > 0
}

func masqChain(o fwapi.Owner, ms []fwapi.Masq, v4 bool) Chain {
	c := Chain{Name: ChainName(PrefixMasq, o)}
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	for _, m := range ms {
		if fwapi.IsV4(m.Addr.IP) != v4 {
			continue
		}
		src := fwapi.HostNet(m.Addr.IP).String()
		target := []string{"-j", "MASQUERADE"}
		if m.Source != nil {
			target = []string{"-j", "SNAT", "--to-source", m.Source.String()}
		}
		c.Rules = append(c.Rules,
			digested(Rule{"-s", src, "-d", fwapi.SubnetOf(&m.Addr).String()}, "-j", "RETURN"),
			digested(Rule{"-s", src, "-d", multicast}, "-j", "RETURN"),
			digested(Rule{"-s", src}, target...))
	}
	return c
}

// dnatChain marks hairpin and localhost connections, then DNATs, per
// mapping of the family.
func dnatChain(o fwapi.Owner, pm *fwapi.PortMaps, v4 bool) Chain {
	c := Chain{Name: ChainName(PrefixDNAT, o)}
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	bit := fmt.Sprintf("%#x/%#x", 1<<pm.MarkBit, 1<<pm.MarkBit)
	mark := []string{"-j", "MARK", "--set-xmark", bit}
	if pm.ExternalSetMarkChain != "" {
		mark = []string{"-j", pm.ExternalSetMarkChain}
	}
	src, dst := addrMatch(conds, "s"), addrMatch(conds, "d")
	var sources []Rule
	switch {
	case !pm.SNAT:
	case pm.MasqAll:
		sources = []Rule{nil}
	case v4:
		sources = []Rule{src(fwapi.SubnetOf(cip)), src(fwapi.HostNet(net.IPv4(127, 0, 0, 1)))}
	default:
		sources = []Rule{src(fwapi.SubnetOf(cip))}
	}
	for _, m := range fwapi.ForFamily(pm.Mappings, v4) {
		match := slices.Clone(Rule(conds))
		if h := m.SpecificHost(); h != nil {
			match = append(match, dst(fwapi.HostNet(h))...)
		}
		dport, to := fmt.Sprint(m.HostPort), fwapi.JoinHostPort(cip.IP, m.ContainerPort)
		if m.IsRange() { // one rule; each port kept as it is
			dport, to = fmt.Sprintf("%d:%d", m.HostPort, m.HostLast()), cip.IP.String()
		}
		match = append(match, "-p", m.Protocol, "-m", m.Protocol, "--dport", dport)
		for _, s := range sources {
			c.Rules = append(c.Rules, digested(append(slices.Clone(s), match...), mark...))
		}
		c.Rules = append(c.Rules, digested(match, "-j", "DNAT", "--to-destination", to))
	}
	return c
}

// addrMatch returns how the DNAT chain matches a source ("s") or a
// destination ("d") network: -s/-d, or, when the user's conditions hold
// that flag already, an iprange match, since iptables takes one -s and one
// -d per rule. Conditions such as `! -s 192.0.2.0/24` or kube-proxy's
// service range as `! -d 10.96.0.0/12` (user-reports M5) then combine with
// ours instead of failing with "multiple -s flags". (The reference puts the
// conditions on its jump into the chain instead.) Conditions without the
// flag keep the plain form, so the rules of existing pods keep their text.
func addrMatch(conds []string, flag string) func(*net.IPNet) Rule {
	long := map[string][]string{"s": {"--source", "--src"}, "d": {"--destination", "--dst"}}[flag]
	clash := false
	for _, c := range conds {
		clash = clash || c == "-"+flag || c == long[0] || c == long[1]
	}
	if !clash {
		return func(n *net.IPNet) Rule { return Rule{"-" + flag, n.String()} }
	}
	end := map[string]string{"s": "--src-range", "d": "--dst-range"}[flag]
	return func(n *net.IPNet) Rule {
		return Rule{"-m", "iprange", end, fmt.Sprintf("%s-%s", n.IP, lastAddr(n))}
	}
}

// lastAddr returns the highest address of n.
func lastAddr(n *net.IPNet) net.IP {
	first := n.IP
	if len(n.Mask) == net.IPv4len {
		first = first.To4()
	}
	ip := make(net.IP, len(first))
	for i := range ip {
		ip[i] = first[i] | ^n.Mask[i]
	}
	return ip
}

// hairpinChain masquerades the packets the DNAT chain marked. It is empty
// without SNAT, or when an external chain sets the mark (its owner then
// masquerades).
func hairpinChain(o fwapi.Owner, pm *fwapi.PortMaps) Chain {
	c := Chain{Name: ChainName(PrefixHairpin, o)}
	if pm.SNAT && pm.ExternalSetMarkChain == "" {
		bit := fmt.Sprintf("%#x/%#x", 1<<pm.MarkBit, 1<<pm.MarkBit)
		c.Rules = append(c.Rules, digested(Rule{"-m", "mark", "--mark", bit}, "-j", "MASQUERADE"))
	}
	return c
}

// Sources returns the "-s" networks of rules, each once, sorted: what the
// masquerade chain's jumps match.
func Sources(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		if len(r) > 1 && r[0] == "-s" && !slices.Contains(out, r[1]) {
			out = append(out, r[1])
		}
	}
	slices.Sort(out)
	return out
}

// Jumps returns the jumps leading into an owner chain. They are a function
// of the chain's name and, for a masquerade chain, of the sources of its
// rules, so Remove derives them from what it reads back.
func Jumps(o fwapi.Owner, chain string, sources []string) []Jump {
	tag := Rule{"-m", "comment", "--comment", EntryTag(o), "-j", chain}
	switch {
	case strings.HasPrefix(chain, PrefixDNAT):
		r := append(Rule{"-m", "addrtype", "--dst-type", "LOCAL"}, tag...)
		return []Jump{{Parent: "PREROUTING", Rule: r}, {Parent: "OUTPUT", Rule: r}}
	case strings.HasPrefix(chain, PrefixHairpin):
		return []Jump{{Parent: "POSTROUTING", Rule: tag}}
	}
	var out []Jump
	for _, s := range sources {
		out = append(out, Jump{Parent: "POSTROUTING", Rule: append(Rule{"-s", s}, tag...)})
	}
	return out
}

// ChainJumps returns the jumps leading into c.
func ChainJumps(o fwapi.Owner, c Chain) []Jump { return Jumps(o, c.Name, Sources(c.Rules)) }
