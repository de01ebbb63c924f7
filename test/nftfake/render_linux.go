package nftfake

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// Dump renders the ruleset as nft-like text, for assertions and failure
// messages: each table with its sets and maps (keys and data in hex,
// elements with what they jump to and their comment) and its chains
// (hook, use count, handle), each rule as the kinds of its expressions,
// what it jumps or goes to, its comment and its handle. Tables, sets,
// chains and rules are in the order they were made, as nft lists them.
func (f *Fake) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, t := range f.rs.tables {
		fmt.Fprintf(&b, "table %s %s {\n", familyName(t.family), t.name)
		for _, s := range t.sets {
			renderSet(&b, s)
		}
		for _, c := range t.chains {
			renderChain(&b, t, c)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

var hookNames = []string{"prerouting", "input", "forward", "output", "postrouting"}

func renderChain(b *strings.Builder, t *table, c *chain) {
	fmt.Fprintf(b, "\tchain %s { # handle %d use %d\n", c.name, c.handle, t.use(c))
	if h := c.hook; h != nil {
		hn := fmt.Sprint(h.num)
		if int(h.num) < len(hookNames) {
			hn = hookNames[h.num]
		}
		policy := "accept"
		if h.policy == 0 {
			policy = "drop"
		}
		fmt.Fprintf(b, "\t\ttype %s hook %s priority %d; policy %s;\n", h.typ, hn, h.prio, policy)
	}
	for _, r := range c.rules {
		var words []string
		for _, e := range netfilter.RawExprs(r.exprs) {
			words = append(words, e.Name)
		}
		if v := jumpOf(r); v != "" {
			words = append(words, v)
		}
		if len(r.sets) > 0 {
			words = append(words, "@"+strings.Join(r.sets, ",@"))
		}
		if c, ok := userdata.GetString(r.userdata, userdata.TypeComment); ok {
			words = append(words, fmt.Sprintf("comment %q", c))
		}
		fmt.Fprintf(b, "\t\t%s # handle %d\n", strings.Join(words, " "), r.handle)
	}
	b.WriteString("\t}\n")
}

// jumpOf renders the verdicts of a rule's immediates that name a chain.
func jumpOf(r *rule) string {
	var out []string
	for _, e := range netfilter.RawExprs(r.exprs) {
		if e.Name != "immediate" {
			continue
		}
		a, _ := parseAttrs(e.Data)
		d, _ := parseAttrs(a[unix.NFTA_IMMEDIATE_DATA])
		if v := verdictText(d[unix.NFTA_DATA_VERDICT]); v != "" {
			out = append(out, v)
		}
	}
	return strings.Join(out, " ")
}

// verdictText renders a verdict that names a chain ("jump x", "goto x").
func verdictText(raw []byte) string {
	va, _ := parseAttrs(raw)
	code, _ := va.u32(unix.NFTA_VERDICT_CODE)
	chain, ok := va.str(unix.NFTA_VERDICT_CHAIN)
	if !ok {
		return ""
	}
	return verdictWord(int32(code)) + " " + chain
}

func verdictWord(code int32) string {
	if code == unix.NFT_GOTO {
		return "goto"
	}
	return "jump"
}

func renderSet(b *strings.Builder, s *set) {
	kind, data := "set", ""
	switch {
	case s.verdictMap():
		kind, data = "map", " : verdict"
	case s.isMap():
		kind, data = "map", fmt.Sprintf(" : %#x [%d bytes]", s.dataType, s.dataLen)
	}
	fmt.Fprintf(b, "\t%s %s { # handle %d\n\t\ttype %#x [%d bytes]%s;", kind, s.name, s.handle, s.keyType, s.keyLen, data)
	var flags []string
	for _, f := range []struct {
		bit  uint32
		name string
	}{{anonymousFlag, "anonymous"}, {constantFlag, "constant"}, {intervalFlag, "interval"}, {concatFlag, "concat"}} {
		if s.flags&f.bit != 0 {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		fmt.Fprintf(b, " flags %s;", strings.Join(flags, ","))
	}
	b.WriteString("\n")
	for _, e := range s.elems {
		fmt.Fprintf(b, "\t\telement %s\n", elemText(e))
	}
	b.WriteString("\t}\n")
}

func elemText(e elem) string {
	s := hex.EncodeToString(e.key)
	if e.end != nil {
		s += "-" + hex.EncodeToString(e.end)
	}
	if e.flags&unix.NFT_SET_ELEM_INTERVAL_END != 0 {
		s += " interval-end"
	}
	switch {
	case e.verdict != nil && e.verdict.chain != "":
		s += " : " + verdictWord(e.verdict.code) + " " + e.verdict.chain
	case e.verdict != nil:
		s += fmt.Sprintf(" : verdict %d", e.verdict.code)
	case e.data != nil:
		s += " : " + hex.EncodeToString(e.data)
	}
	if c, ok := userdata.GetString(e.userdata, userdata.TypeComment); ok {
		s += fmt.Sprintf(" comment %q", c)
	}
	return s
}
