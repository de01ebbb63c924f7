package firewall

import (
	"fmt"
	"slices"
	"strings"
)

// nftExisting is an owner chain as found in the kernel: its name and the
// comments of its rules.
type nftExisting struct {
	table    nftTable
	name     string
	comments []string
}

func (e nftExisting) id() string { return e.table.String() + " " + e.name }

func (c nftChain) id() string { return c.table.String() + " " + c.name }

// comments returns the comments the chain's rules carry, in order.
func (c nftChain) comments() []string {
	out := make([]string, len(c.rules))
	for i, r := range c.rules {
		out[i] = r.comment()
	}
	return out
}

// elems returns the distinct map elements the existing chain's rules name.
func (e nftExisting) elems() []nftElem {
	var out []nftElem
	seen := map[nftElem]bool{}
	for _, c := range e.comments {
		if _, el, ok := parseNFTComment(c); ok && el != nil && !seen[*el] {
			seen[*el] = true
			out = append(out, *el)
		}
	}
	return out
}

// elems returns the distinct map elements the chain needs.
func (c nftChain) elems() []nftElem {
	var out []nftElem
	seen := map[nftElem]bool{}
	for _, r := range c.rules {
		if r.elem != nil && !seen[*r.elem] {
			seen[*r.elem] = true
			out = append(out, *r.elem)
		}
	}
	return out
}

// nftEnsureScript renders the one transaction that turns the owner's
// existing chains into the desired ones: table skeletons, chains rewritten
// in place (flush + add inside the same transaction, so no packet sees a
// gap), stale map elements and chains deleted.
func nftEnsureScript(desired []nftChain, existing []nftExisting) string {
	return nftEnsureScriptSkipping(desired, existing, nil)
}

// nftEnsureScriptSkipping is nftEnsureScript without the skeletons of the
// tables in intact, and with only the map elements of a chain that already
// holds exactly its rules: so that repeating it deletes nothing.
func nftEnsureScriptSkipping(desired []nftChain, existing []nftExisting, intact map[nftTable]bool) string {
	var b strings.Builder
	seenTable := map[nftTable]bool{}
	for _, c := range desired {
		if !seenTable[c.table] && !intact[c.table] {
			seenTable[c.table] = true
			writeLines(&b, nftSkeleton(c.table).lines())
		}
	}
	want := map[string]nftChain{}
	for _, c := range desired {
		want[c.id()] = c
	}
	for _, e := range existing {
		c, ok := want[e.id()]
		if !ok {
			writeLines(&b, nftDeleteChain(e))
			continue
		}
		keep := map[nftElem]bool{}
		for _, el := range c.elems() {
			keep[el] = true
		}
		for _, el := range e.elems() {
			if !keep[el] {
				writeLines(&b, nftDeleteElem(e.table, e.name, el))
			}
		}
	}
	have := map[string][]string{}
	for _, e := range existing {
		have[e.id()] = e.comments
	}
	for _, c := range desired {
		lines := nftWriteChain(c)
		if got, ok := have[c.id()]; ok && intact != nil && slices.Equal(got, c.comments()) {
			lines = lines[2+len(c.rules):] // the elements only
		}
		writeLines(&b, lines)
	}
	return b.String()
}

// nftRemoveScript renders the transaction deleting existing owner chains;
// empty when there is nothing to delete. The fast form deletes map
// elements directly; the safe form re-adds each first, so that an element
// deleted behind our back does not fail the transaction (at the price of a
// full validation of the table by the kernel).
func nftRemoveScript(existing []nftExisting, safe bool) string {
	var b strings.Builder
	for _, e := range existing {
		if safe {
			writeLines(&b, nftDeleteChain(e))
			continue
		}
		for _, el := range e.elems() {
			fmt.Fprintf(&b, "delete element %s %s { %s }\n", e.table, el.set, el.key)
		}
		ts := e.table.String()
		writeLines(&b, []string{"flush chain " + ts + " " + e.name, "delete chain " + ts + " " + e.name})
	}
	return b.String()
}

// nftWriteChain (re)writes an owner chain and adds its map elements.
func nftWriteChain(c nftChain) []string {
	ts := c.table.String()
	lines := []string{
		"add chain " + ts + " " + c.name,
		"flush chain " + ts + " " + c.name,
	}
	for _, r := range c.rules {
		lines = append(lines, fmt.Sprintf("add rule %s %s %s comment %q", ts, c.name, r.text, r.comment()))
	}
	for _, el := range c.elems() {
		lines = append(lines, fmt.Sprintf("add element %s %s { %s : jump %s }", ts, el.set, el.key, c.name))
	}
	return lines
}

// nftDeleteElem deletes a map element pointing at chain. Adding it first
// makes the deletion succeed even when the element is already gone.
func nftDeleteElem(t nftTable, chain string, el nftElem) []string {
	ts := t.String()
	return []string{
		fmt.Sprintf("add element %s %s { %s : jump %s }", ts, el.set, el.key, chain),
		fmt.Sprintf("delete element %s %s { %s }", ts, el.set, el.key),
	}
}

// nftDeleteChain deletes an owner chain and the map elements leading to it.
func nftDeleteChain(e nftExisting) []string {
	var lines []string
	for _, el := range e.elems() {
		lines = append(lines, nftDeleteElem(e.table, e.name, el)...)
	}
	ts := e.table.String()
	return append(lines,
		"add chain "+ts+" "+e.name,
		"flush chain "+ts+" "+e.name,
		"delete chain "+ts+" "+e.name)
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}
