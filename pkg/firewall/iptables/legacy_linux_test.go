package iptables

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/types"
	"cnisuite/test/fwtest"
)

// The writer of an iptables-legacy node, against the kernel's
// iptables-legacy tables in a network namespace of the tests' user
// namespace (test/userns): no root needed.

// legacySave returns iptables-legacy-save and ip6tables-legacy-save of
// table nat, without their dated comment lines.
func legacySave(t *testing.T) string {
	t.Helper()
	return saved(t, "iptables-legacy-save") + saved(t, "ip6tables-legacy-save")
}

// legacyRun runs an iptables-legacy command of table nat.
func legacyRun(t *testing.T, cmd string, args ...string) {
	t.Helper()
	args = append([]string{"-w", "-t", "nat"}, args...)
	if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, out)
	}
}

// assertNoChainsOf fails when the save names a chain of o.
func assertNoChainsOf(t *testing.T, save string, o fwapi.Owner) {
	t.Helper()
	for _, c := range natchain.OwnerChains(o) {
		if strings.Contains(save, c) {
			t.Errorf("chain %s of %s, or a jump to it, is left:\n%s", c, o, save)
		}
	}
}

// TestLegacyLifecycle: on iptables-legacy, a second Ensure changes
// nothing; Check names a deleted rule, a deleted jump and a deleted
// chain; Remove leaves nothing of the owner and keeps another's.
func TestLegacyLifecycle(t *testing.T) {
	ctx := context.Background()
	all := owners(t)[:3]
	o, r := all[1].Owner, all[1].Rules
	dn := natchain.ChainName(natchain.PrefixDNAT, o)
	hm := natchain.ChainName(natchain.PrefixHairpin, o)
	inNS(t, func() {
		b := withWriter(newLegacy("-legacy"))
		ensureAll(t, b, all)
		first := legacySave(t)
		ensureAll(t, b, all)
		if again := legacySave(t); again != first {
			t.Errorf("a second Ensure changed the tables:\n%s\nbefore:\n%s", again, first)
		}
		for _, c := range all {
			if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
				t.Errorf("Check(%s): %v", c.Name, err)
			}
		}
		breaks := []struct {
			name, want string
			do         func()
		}{
			{"rule", "is missing from chain " + dn, func() { legacyRun(t, "ip6tables-legacy", "-D", dn, "1") }},
			{"jump", "jump", func() {
				j := natchain.ChainJumps(o, natchain.Desired(o, r, true)[0])[1]
				legacyRun(t, "iptables-legacy", append([]string{"-D", j.Parent}, j.Rule...)...)
			}},
			{"chain", "chain " + hm + " is missing", func() {
				j := natchain.ChainJumps(o, natchain.Desired(o, r, true)[1])[0]
				legacyRun(t, "iptables-legacy", append([]string{"-D", j.Parent}, j.Rule...)...)
				legacyRun(t, "iptables-legacy", "-F", hm)
				legacyRun(t, "iptables-legacy", "-X", hm)
			}},
		}
		for _, br := range breaks {
			br.do()
			err := b.Check(ctx, o, r)
			if !errors.Is(err, fwapi.ErrMissing) || !strings.Contains(err.Error(), br.want) {
				t.Errorf("Check after the %s was deleted = %v, want fwapi.ErrMissing saying %q", br.name, err, br.want)
			}
			if err := b.Ensure(ctx, o, r); err != nil {
				t.Fatalf("Ensure to repair the %s: %v", br.name, err)
			}
			if err := b.Check(ctx, o, r); err != nil {
				t.Errorf("Check after repairing the %s: %v", br.name, err)
			}
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		save := legacySave(t)
		assertNoChainsOf(t, save, o)
		for _, c := range []fwtest.Case{all[0], all[2]} {
			if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
				t.Errorf("Check(%s) after another's Remove: %v", c.Name, err)
			}
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Errorf("Remove of what is gone: %v", err)
		}
	})
}

// TestLegacyRemoveAfterJumpDeleted: a jump deleted behind our back makes
// the removal payload fail (iptables-restore -D of a missing rule); Remove
// then finds the jumps in a listing of the built-in chains and still
// removes everything of the owner, and nothing of another's.
func TestLegacyRemoveAfterJumpDeleted(t *testing.T) {
	ctx := context.Background()
	all := owners(t)[:3]
	o, r := all[1].Owner, all[1].Rules
	inNS(t, func() {
		b := withWriter(newLegacy("-legacy"))
		ensureAll(t, b, all)
		j := natchain.ChainJumps(o, natchain.Desired(o, r, true)[0])[1] // OUTPUT
		legacyRun(t, "iptables-legacy", append([]string{"-D", j.Parent}, j.Rule...)...)
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		assertNoChainsOf(t, legacySave(t), o)
		for _, c := range []fwtest.Case{all[0], all[2]} {
			if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
				t.Errorf("Check(%s) after another's Remove: %v", c.Name, err)
			}
		}
	})
}

// TestLegacyGC: GC of network net1 keeping one attachment deletes the
// chains and jumps of net1's others, and leaves the kept one, another
// plugin's and another network's whole.
func TestLegacyGC(t *testing.T) {
	ctx := context.Background()
	all := owners(t)
	inNS(t, func() {
		b := withWriter(newLegacy("-legacy"))
		ensureAll(t, b, all)
		kept := all[2]
		if err := b.GC(ctx, fwapi.PluginPortmap, "net1", []fwapi.Owner{kept.Owner}); err != nil {
			t.Fatalf("GC: %v", err)
		}
		assertNoChainsOf(t, legacySave(t), all[1].Owner)
		for _, c := range []fwtest.Case{all[0], kept, all[3]} {
			if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
				t.Errorf("Check(%s) after GC: %v", c.Name, err)
			}
		}
		before := legacySave(t)
		if err := b.GC(ctx, fwapi.PluginPortmap, "net1", []fwapi.Owner{kept.Owner}); err != nil {
			t.Fatalf("GC again: %v", err)
		}
		if after := legacySave(t); after != before {
			t.Errorf("GC with nothing stale changed the tables:\n%s\nbefore:\n%s", after, before)
		}
	})
}

// TestLegacyToolsMissing: a node whose iptables tools are not there (a
// writer naming tools that do not exist) is an I/O error for every call,
// and Usable's probe of iptables-legacy answers without one, with the
// code of a backend that is not available.
func TestLegacyToolsMissing(t *testing.T) {
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		b := withWriter(newLegacy("-none"))
		for name, call := range everyCall(b, o, r) {
			if err := call(); err == nil || !errors.Is(err, types.ErrIO) {
				t.Errorf("%s without the tools = %v (code %d), want an I/O error", name, err, types.Code(err))
			}
		}
		if err := askIPTables(ctx, "iptables-legacy"); err != nil {
			t.Errorf("askIPTables(iptables-legacy) = %v", err)
		}
		if err := askIPTables(ctx, "iptables-none"); types.Code(err) != types.CodeNotAvailable {
			t.Errorf("askIPTables(iptables-none) = %v (code %d), want code %d", err, types.Code(err), types.CodeNotAvailable)
		}
	})
}
