package nftmodel

import (
	"fmt"
	"slices"
	"strings"
)

// Script renders, as one `nft -f` transaction, what turns the owner's
// existing chains into the desired ones: the skeletons of the desired
// chains' tables (from skels; a table without one gets only "add table"),
// chains rewritten in place (flush + add inside the same transaction, so no
// packet sees a gap), stale map elements and chains deleted.
//
// With intact non-nil, the skeletons of the tables it holds are left out,
// and a chain that already holds exactly its rules gets only its map
// elements: so that repeating the script deletes nothing.
func Script(desired []Chain, existing []Existing, skels []Skeleton, intact map[Table]bool) string {
	var b strings.Builder
	seenTable := map[Table]bool{}
	for _, c := range desired {
		if !seenTable[c.Table] && !intact[c.Table] {
			seenTable[c.Table] = true
			writeLines(&b, skeletonOf(skels, c.Table).Lines())
		}
	}
	want := map[string]Chain{}
	for _, c := range desired {
		want[c.ID()] = c
	}
	for _, e := range existing {
		c, ok := want[e.ID()]
		if !ok {
			writeLines(&b, deleteChainLines(e))
			continue
		}
		keep := map[Elem]bool{}
		for _, el := range c.Elems() {
			keep[el] = true
		}
		for _, el := range e.Elems() {
			if !keep[el] {
				writeLines(&b, deleteElemLines(e.Table, e.Name, el))
			}
		}
	}
	have := map[string][]string{}
	for _, e := range existing {
		have[e.ID()] = e.Comments
	}
	for _, c := range desired {
		got, had := have[c.ID()]
		lines := writeChainLines(c, !had && exclusive(c.Name))
		if had && intact != nil && slices.Equal(got, c.Comments()) {
			lines = lines[2+len(c.Rules):] // the elements only
		}
		writeLines(&b, lines)
	}
	return b.String()
}

func skeletonOf(skels []Skeleton, t Table) Skeleton {
	for _, s := range skels {
		if s.Table == t {
			return s
		}
	}
	return Skeleton{Table: t}
}

// writeChainLines (re)writes an owner chain and adds its map elements,
// with create element in a set or data map when fresh (addElem).
func writeChainLines(c Chain, fresh bool) []string {
	ts := c.Table.String()
	lines := []string{
		"add chain " + ts + " " + c.Name,
		"flush chain " + ts + " " + c.Name,
	}
	for _, r := range c.Rules {
		// nft strings take no escapes: the comment goes as it is (Go's %q
		// would write a name's non-printable bytes as \u escapes, which nft keeps
		// literally, and the comment would no longer name the map element).
		lines = append(lines, fmt.Sprintf("add rule %s %s %s comment \"%s\"", ts, c.Name, r.Text, r.Comment()))
	}
	for _, el := range c.Elems() {
		lines = append(lines, elemLine(c.Table, el, c.Name, fresh))
	}
	return lines
}

// elemLine adds an element leading to chain (addElem).
func elemLine(t Table, el Elem, chain string, fresh bool) string {
	m := Maps[el.Set]
	if m.Verdict() {
		return fmt.Sprintf("add element %s %s { %s : jump %s }", t, el.Set, el.Key, chain)
	}
	verb, value := "add", ""
	if fresh {
		verb = "create"
	}
	if !m.IsSet {
		value = " : " + el.Data
	}
	return fmt.Sprintf("%s element %s %s { %s comment \"%s\"%s }", verb, t, el.Set, el.Key, chain, value)
}

// deleteElemLines deletes a map element pointing at chain. Adding it first
// makes the deletion succeed even when the element is already gone.
func deleteElemLines(t Table, chain string, el Elem) []string {
	ts := t.String()
	return []string{
		elemLine(t, el, chain, false),
		fmt.Sprintf("delete element %s %s { %s }", ts, el.Set, el.Key),
	}
}

// deleteChainLines deletes an owner chain and the map elements leading to
// it, in the form that succeeds whatever of it is already gone.
func deleteChainLines(e Existing) []string {
	var lines []string
	for _, el := range e.Elems() {
		lines = append(lines, deleteElemLines(e.Table, e.Name, el)...)
	}
	ts := e.Table.String()
	return append(lines,
		"add chain "+ts+" "+e.Name,
		"flush chain "+ts+" "+e.Name,
		"delete chain "+ts+" "+e.Name)
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}
