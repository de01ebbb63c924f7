package nftmodel

import (
	"strings"
	"testing"

	"cnisuite/test/golden"
)

// existingOf is what ReadChains would read of chains written as desired.
func existingOf(chains []Chain) []Existing {
	var out []Existing
	for _, c := range chains {
		out = append(out, Existing{Table: c.Table, Name: c.Name, Comments: c.Comments()})
	}
	return out
}

// TestScript: the `nft -f` form of Ensure (what rules with user
// conditions go through, and what golden files show). Fresh: the
// skeleton, the chains, their elements created (a set's or data map's:
// another owner's key fails it). Update: stale elements re-added then
// deleted (so that one already gone does not fail the script), the chain
// rewritten in place, a chain no longer wanted deleted. Repeat, with the
// skeleton intact: the elements only, nothing deleted or flushed.
func TestScript(t *testing.T) {
	a := testOwner("a")
	chains := testChains(a, "10.88.0.2", "5353", "8080")
	skels := []Skeleton{testSkeleton()}
	golden.Check(t, "script_fresh", Script(chains, nil, skels, nil))
	// Hairpin masquerade turned off: the DNAT chain alone is desired (the
	// subnet chain, not desired, is not read).
	old := existingOf(testChains(a, "10.88.0.2", "5353", "8080", "9000-9010")[1:])
	golden.Check(t, "script_update", Script(testChains(a, "10.88.0.2", "5354", "8081")[1:2], old, skels, nil))
	repeat := Script(chains, existingOf(chains), skels, map[Table]bool{Port4: true})
	for _, line := range strings.Split(strings.TrimSpace(repeat), "\n") {
		if !strings.HasPrefix(line, "add element ") {
			t.Errorf("a repeated script holds %q; want only the elements:\n%s", line, repeat)
		}
	}
	if n := strings.Count(repeat, "\n"); n != 4 {
		t.Errorf("a repeated script adds %d elements, want the 4 of the chains:\n%s", n, repeat)
	}
}

// TestSkeletonLines: the fixed part of a table as nft commands.
func TestSkeletonLines(t *testing.T) {
	golden.Check(t, "skeleton", strings.Join(append(testSkeleton().Lines(), LocalnetGuard().Lines()...), "\n")+"\n")
}
