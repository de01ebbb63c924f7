package natchain

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
)

// Line returns an iptables-restore line: the action ("-A <chain>", "-D
// <chain>", "-I <chain> 1") and the rule.
func Line(action string, r Rule) string { return action + " " + r.String() }

// EnsurePayload renders the iptables-restore --noflush payload turning the
// existing owner chains (name → the sources of their rules, see Sources)
// into the desired ones. Declaring a chain flushes it, so rewriting it is
// one line; jumps are added or deleted by difference with the existing
// chains' jumps that present finds in place (nil: all of them), so that a
// jump deleted behind our back is added again, and not deleted (a -D of a
// missing rule fails the whole payload).
func EnsurePayload(o fwapi.Owner, desired []Chain, existing map[string][]string, present func(Jump) bool) string {
	if present == nil {
		present = func(Jump) bool { return true }
	}
	lines := []string{"*nat"}
	want := map[string]bool{}
	for _, c := range desired {
		want[c.Name] = true
		lines = append(lines, ":"+c.Name+" - [0:0]")
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		if !want[name] {
			lines = append(lines, deleteChain(o, name, existing[name], present)...)
		}
	}
	for _, c := range desired {
		for _, r := range c.Rules {
			lines = append(lines, Line("-A "+c.Name, r))
		}
		old, had := existing[c.Name]
		have := map[string]bool{}
		if had {
			for _, j := range Jumps(o, c.Name, old) {
				have[j.key()] = present(j)
			}
		}
		wanted := map[string]bool{}
		for _, j := range ChainJumps(o, c) {
			wanted[j.key()] = true
			if !have[j.key()] {
				lines = append(lines, Line("-A "+j.Parent, j.Rule))
			}
		}
		for _, j := range Jumps(o, c.Name, old) {
			if have[j.key()] && !wanted[j.key()] {
				lines = append(lines, Line("-D "+j.Parent, j.Rule))
			}
		}
	}
	return strings.Join(append(lines, "COMMIT"), "\n") + "\n"
}

func (j Jump) key() string { return j.Parent + " " + j.Rule.String() }

// RemovePayload deletes the existing owner chains (name → sources) and
// their jumps; empty when nothing exists.
func RemovePayload(o fwapi.Owner, existing map[string][]string) string {
	if len(existing) == 0 {
		return ""
	}
	lines := []string{"*nat"}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		lines = append(lines, deleteChain(o, name, existing[name], nil)...)
	}
	return strings.Join(append(lines, "COMMIT"), "\n") + "\n"
}

// deleteChain deletes a chain and the jumps into it that present finds
// (nil: all).
func deleteChain(o fwapi.Owner, chain string, sources []string, present func(Jump) bool) []string {
	var lines []string
	for _, j := range Jumps(o, chain, sources) {
		if present == nil || present(j) {
			lines = append(lines, Line("-D "+j.Parent, j.Rule))
		}
	}
	return append(lines, "-F "+chain, "-X "+chain)
}

// Payloads returns the iptables-restore payloads Ensure writes for an owner
// with no rules yet, each after a line naming its command: the text golden
// files hold.
func Payloads(o fwapi.Owner, r fwapi.Rules) string {
	var b strings.Builder
	for _, v4 := range []bool{true, false} {
		cmd := "ip6tables-restore"
		if v4 {
			cmd = "iptables-restore"
		}
		if d := Desired(o, r, v4); len(d) > 0 {
			fmt.Fprintf(&b, "# %s\n%s", cmd, EnsurePayload(o, d, nil, nil))
		}
	}
	return b.String()
}
