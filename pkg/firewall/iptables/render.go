package iptables

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"cnisuite/pkg/firewall/fwtypes"
)

// Owner chain prefixes of the iptables backend, all in table nat. Chain
// names are at most 28 characters: prefix, 6 hex of the network hash, 14
// of the owner hash.
const (
	PrefixMasq    = "CNIS-MQ-" // bridge masquerade, from POSTROUTING
	PrefixDNAT    = "CNIS-DN-" // portmap DNAT, from PREROUTING and OUTPUT
	PrefixHairpin = "CNIS-HM-" // portmap masquerade of marked packets
)

// iptUnit is an owner chain with its rules (the text after "-A <chain> ").
type iptUnit struct {
	chain string
	rules []string
}

// iptEntry is a jump into an owner chain from a built-in chain.
type iptEntry struct {
	parent string
	spec   string // "-m … -j <chain>"
	insert bool   // -I <parent> 1 instead of -A
}

// ChainName returns the name of an owner chain of the given kind.
func ChainName(prefix string, o fwtypes.Owner) string {
	return prefix + o.NetHash()[:6] + o.Hash()[:14]
}

func iptNetPrefixes(plugin, network string) []string {
	n := fwtypes.Owner{Plugin: plugin, Network: network}.NetHash()[:6]
	return []string{PrefixMasq + n, PrefixDNAT + n, PrefixHairpin + n}
}

// iptOwnerChains lists every chain an owner may have in one family.
func iptOwnerChains(o fwtypes.Owner) []string {
	return []string{ChainName(PrefixMasq, o), ChainName(PrefixDNAT, o), ChainName(PrefixHairpin, o)}
}

// iptComment is the comment of a rule: a digest of the rule text.
func iptComment(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "cnisuite " + hex.EncodeToString(sum[:4])
}

// iptRule appends the digest comment before the target of a rule.
func iptRule(matches, target string) string {
	m := strings.TrimSpace(matches)
	return strings.TrimSpace(m + " -m comment --comment " + iptQuote(iptComment(m+" "+target)) + " " + target)
}

// iptCommentRE is compiled on first use: most calls never read a rule
// back as text, and a compile at start-up costs every process.
var iptCommentRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`--comment "?(cnisuite [0-9a-f]{8})"?`)
})

// iptRuleComment returns the digest comment of a listed rule.
func iptRuleComment(line string) string {
	m := iptCommentRE().FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// iptDesired returns the owner chains r needs in one family.
func iptDesired(o fwtypes.Owner, r fwtypes.Rules, v4 bool) []iptUnit {
	var out []iptUnit
	if u := iptMasqUnit(o, r.Masq, v4); len(u.rules) > 0 {
		out = append(out, u)
	}
	if pm := r.PortMaps; pm != nil && (v4 && pm.ContainerV4 != nil || !v4 && pm.ContainerV6 != nil) {
		out = append(out, iptDNATUnit(o, pm, v4), iptHairpinUnit(o, pm))
	}
	return out
}

func iptMasqUnit(o fwtypes.Owner, ms []fwtypes.Masq, v4 bool) iptUnit {
	u := iptUnit{chain: ChainName(PrefixMasq, o)}
	multicast := "ff00::/8"
	if v4 {
		multicast = "224.0.0.0/4"
	}
	for _, m := range ms {
		if fwtypes.IsV4(m.Addr.IP) != v4 {
			continue
		}
		src := "-s " + fwtypes.HostNet(m.Addr.IP).String()
		u.rules = append(u.rules,
			iptRule(src+" -d "+fwtypes.SubnetOf(&m.Addr).String(), "-j RETURN"),
			iptRule(src+" -d "+multicast, "-j RETURN"),
			iptRule(src, "-j MASQUERADE"))
	}
	return u
}

// iptDNATUnit marks hairpin and localhost connections, then DNATs, per
// mapping of the family.
func iptDNATUnit(o fwtypes.Owner, pm *fwtypes.PortMaps, v4 bool) iptUnit {
	u := iptUnit{chain: ChainName(PrefixDNAT, o)}
	cip, conds := pm.ContainerV6, pm.ConditionsV6
	if v4 {
		cip, conds = pm.ContainerV4, pm.ConditionsV4
	}
	mark := fmt.Sprintf("-j MARK --set-xmark %#x/%#x", 1<<pm.MarkBit, 1<<pm.MarkBit)
	if pm.ExternalSetMarkChain != "" {
		mark = "-j " + pm.ExternalSetMarkChain
	}
	src, dst := iptAddrMatch(conds, "s"), iptAddrMatch(conds, "d")
	var sources []string
	switch {
	case !pm.SNAT:
	case pm.MasqAll:
		sources = []string{""}
	case v4:
		sources = []string{src(fwtypes.SubnetOf(cip)), src(fwtypes.HostNet(net.IPv4(127, 0, 0, 1)))}
	default:
		sources = []string{src(fwtypes.SubnetOf(cip))}
	}
	for _, m := range fwtypes.ForFamily(pm.Mappings, v4) {
		match := strings.Join(conds, " ")
		if h := m.SpecificHost(); h != nil {
			match += " " + dst(fwtypes.HostNet(h))
		}
		match += fmt.Sprintf(" -p %s -m %s --dport %d", m.Protocol, m.Protocol, m.HostPort)
		for _, src := range sources {
			u.rules = append(u.rules, iptRule(src+" "+strings.TrimSpace(match), mark))
		}
		u.rules = append(u.rules, iptRule(match, "-j DNAT --to-destination "+fwtypes.JoinHostPort(cip.IP, m.ContainerPort)))
	}
	return u
}

// iptAddrMatch returns how the DNAT chain matches a source ("s") or a
// destination ("d") network: -s/-d, or, when the user's conditions hold
// that flag already, an iprange match, since iptables takes one -s and one
// -d per rule. Conditions such as `! -s 192.0.2.0/24` or kube-proxy's
// service range as `! -d 10.96.0.0/12` (user-reports M5) then combine with
// ours instead of failing with "multiple -s flags". (The reference puts the
// conditions on its jump into the chain instead.) Conditions without the
// flag keep the plain form, so the rules of existing pods keep their text.
func iptAddrMatch(conds []string, flag string) func(*net.IPNet) string {
	long := map[string][]string{"s": {"--source", "--src"}, "d": {"--destination", "--dst"}}[flag]
	clash := false
	for _, c := range conds {
		clash = clash || c == "-"+flag || c == long[0] || c == long[1]
	}
	if !clash {
		return func(n *net.IPNet) string { return "-" + flag + " " + n.String() }
	}
	end := map[string]string{"s": "src", "d": "dst"}[flag]
	return func(n *net.IPNet) string {
		return fmt.Sprintf("-m iprange --%s-range %s-%s", end, n.IP, lastAddr(n))
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

// iptHairpinUnit masquerades the packets the DNAT chain marked. It is empty
// without SNAT, or when an external chain sets the mark (its owner then
// masquerades).
func iptHairpinUnit(o fwtypes.Owner, pm *fwtypes.PortMaps) iptUnit {
	u := iptUnit{chain: ChainName(PrefixHairpin, o)}
	if pm.SNAT && pm.ExternalSetMarkChain == "" {
		bit := fmt.Sprintf("%#x/%#x", 1<<pm.MarkBit, 1<<pm.MarkBit)
		u.rules = append(u.rules, iptRule("-m mark --mark "+bit, "-j MASQUERADE"))
	}
	return u
}

// maxComment is the longest text an xt comment match holds (its 256
// bytes less the NUL); iptables cuts a longer --comment short silently.
const maxComment = 255

// entryTag is the comment of an owner's jumps: "cnisuite " and the owner.
// When that does not fit in a comment (a long container ID or network
// name), it is "cnisuite ", 32 hex of the owner's digest, a space and as
// much of the owner as fits: unique, and the same from both writers.
// (iptables-restore also refuses any word over 1,023 bytes.)
func entryTag(o fwtypes.Owner) string {
	tag := "cnisuite " + o.String()
	if len(tag) <= maxComment {
		return tag
	}
	head := "cnisuite " + o.Hash()[:32] + " "
	s := o.String()
	n := maxComment - len(head)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return head + s[:n]
}

// oldEntryTag is the comment the jumps of an owner got from versions
// before entryTag was bounded: "cnisuite " and the owner, cut after 255
// bytes by iptables (longer IDs failed to write). Check still finds them.
func oldEntryTag(o fwtypes.Owner) string {
	tag := "cnisuite " + o.String()
	return tag[:min(len(tag), maxComment)]
}

// iptQuote quotes s as iptables-restore reads a quoted word: a backslash
// takes the next byte as it is, every other byte stands for itself. (Go's
// %q would write a non-printable rune of an interface name as \uXXXX, which
// iptables-restore reads as "uXXXX", while the netlink writer stores the
// bytes: the two would disagree on the owner's tag.)
func iptQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// iptEntries returns the jumps leading into an owner chain. They are a
// function of the chain's name and rules only, so Remove derives them from
// what it reads back.
func iptEntries(o fwtypes.Owner, chain string, rules []string) []iptEntry {
	tag := "-m comment --comment " + iptQuote(entryTag(o)) + " -j " + chain
	switch {
	case strings.HasPrefix(chain, PrefixDNAT):
		spec := "-m addrtype --dst-type LOCAL " + tag
		return []iptEntry{{parent: "PREROUTING", spec: spec}, {parent: "OUTPUT", spec: spec}}
	case strings.HasPrefix(chain, PrefixHairpin):
		return []iptEntry{{parent: "POSTROUTING", spec: tag}}
	}
	var srcs []string
	seen := map[string]bool{}
	for _, r := range rules {
		rest, ok := strings.CutPrefix(r, "-s ")
		if src, _, found := strings.Cut(rest, " "); ok && found && !seen[src] {
			seen[src] = true
			srcs = append(srcs, src)
		}
	}
	sort.Strings(srcs)
	var out []iptEntry
	for _, s := range srcs {
		out = append(out, iptEntry{parent: "POSTROUTING", spec: "-s " + s + " " + tag})
	}
	return out
}

// iptEnsurePayload renders the iptables-restore --noflush payload turning
// the existing owner chains (name → listed rules, without "-A <chain> ")
// into the desired ones. Declaring a chain flushes it, so rewriting it is
// one line; entries are added or deleted by difference.
func iptEnsurePayload(o fwtypes.Owner, desired []iptUnit, existing map[string][]string) string {
	lines := []string{"*nat"}
	want := map[string]bool{}
	for _, u := range desired {
		want[u.chain] = true
		lines = append(lines, ":"+u.chain+" - [0:0]")
	}
	for chain, rules := range sortedChains(existing) {
		if !want[chain] {
			lines = append(lines, iptDeleteChain(o, chain, rules)...)
		}
	}
	for _, u := range desired {
		for _, r := range u.rules {
			lines = append(lines, "-A "+u.chain+" "+r)
		}
		old, had := existing[u.chain]
		have := map[iptEntry]bool{}
		if had {
			for _, e := range iptEntries(o, u.chain, old) {
				have[e] = true
			}
		}
		wantEntries := map[iptEntry]bool{}
		for _, e := range iptEntries(o, u.chain, u.rules) {
			wantEntries[e] = true
			if !have[e] {
				lines = append(lines, e.add())
			}
		}
		for _, e := range iptEntries(o, u.chain, old) {
			if had && !wantEntries[e] {
				lines = append(lines, "-D "+e.parent+" "+e.spec)
			}
		}
	}
	return strings.Join(append(lines, "COMMIT"), "\n") + "\n"
}

// iptRemovePayload deletes the existing owner chains and their entries;
// empty when nothing exists.
func iptRemovePayload(o fwtypes.Owner, existing map[string][]string) string {
	if len(existing) == 0 {
		return ""
	}
	lines := []string{"*nat"}
	for chain, rules := range sortedChains(existing) {
		lines = append(lines, iptDeleteChain(o, chain, rules)...)
	}
	return strings.Join(append(lines, "COMMIT"), "\n") + "\n"
}

func iptDeleteChain(o fwtypes.Owner, chain string, rules []string) []string {
	var lines []string
	for _, e := range iptEntries(o, chain, rules) {
		lines = append(lines, "-D "+e.parent+" "+e.spec)
	}
	return append(lines, "-F "+chain, "-X "+chain)
}

func (e iptEntry) add() string {
	if e.insert {
		return "-I " + e.parent + " 1 " + e.spec
	}
	return "-A " + e.parent + " " + e.spec
}

// sortedChains iterates a chain map in name order, for stable payloads.
func sortedChains(m map[string][]string) func(func(string, []string) bool) {
	return func(yield func(string, []string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// Payloads returns the iptables-restore payloads Ensure writes for an owner
// with no rules yet, each after a line naming its command: the text golden
// files hold.
func Payloads(o fwtypes.Owner, r fwtypes.Rules) string {
	var b strings.Builder
	for _, v4 := range []bool{true, false} {
		if d := iptDesired(o, r, v4); len(d) > 0 {
			fmt.Fprintf(&b, "# %s\n%s", iptFor(v4).restoreCmd, iptEnsurePayload(o, d, nil))
		}
	}
	return b.String()
}
