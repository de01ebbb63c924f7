package iptables

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/userns"
)

// Ensure over netlink records the handles of the jumps it wrote, each a
// jump into one of the owner's chains with the owner's tag; Remove deletes
// everything and the record.
func TestJumpsRecorded(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b := New()
		o := fwtest.PortOwner
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		for _, f := range families {
			jumps, ok := loadJumps(f, o)
			// DNAT: PREROUTING and OUTPUT; hairpin: POSTROUTING.
			if !ok || len(jumps) != 3 {
				t.Fatalf("%s: recorded jumps %v, want 3", f, jumps)
			}
			conn, err := netfilter.Dial()
			if err != nil {
				t.Fatal(err)
			}
			present := map[string]bool{}
			for _, name := range natchain.OwnerChains(o) {
				present[name], _ = conn.ChainExists(f.proto(), "nat", name)
			}
			if _, ok, err := knownJumps(conn, f, o, present); !ok || err != nil {
				t.Errorf("%s: the recorded jumps do not check out: %v", f, err)
			}
			conn.Close()
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if save := saveNAT(t); strings.Contains(save, "CNIS-") {
			t.Errorf("Remove left owner rules:\n%s", save)
		}
		if _, ok := loadJumps(family{v4: true}, o); ok {
			t.Error("Remove left the record of the jumps")
		}
	})
}

// A record that lies is not followed: one naming a rule of someone else
// (the table was rebuilt since, say) leaves that rule alone, and one that
// misses a jump still removes everything.
func TestJumpsRecordNotTrusted(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
	for name, lie := range map[string]func(t *testing.T, real []jump, foreign uint64) []jump{
		"foreign_rule": func(_ *testing.T, real []jump, foreign uint64) []jump {
			return append([]jump{{parent: "POSTROUTING", handle: foreign}}, real[1:]...)
		},
		"jump_missing": func(_ *testing.T, real []jump, _ uint64) []jump { return real[1:] },
	} {
		t.Run(name, func(t *testing.T) {
			inNS(t, func() {
				primeNAT(t)
				out, err := exec.Command("iptables", "-w", "-t", "nat", "-A", "POSTROUTING", "-s", "192.0.2.77/32", "-j", "ACCEPT").CombinedOutput()
				if err != nil {
					t.Fatalf("iptables -A: %v: %s", err, out)
				}
				foreign := foreignHandle(t)
				b, o := New(), fwtest.PortOwner
				if err := b.Ensure(ctx, o, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				real, _ := loadJumps(family{v4: true}, o)
				saveJumps(family{v4: true}, o, lie(t, real, foreign))
				if err := b.Remove(ctx, o); err != nil {
					t.Fatalf("Remove: %v", err)
				}
				save := saveNAT(t)
				if strings.Contains(save, "CNIS-") {
					t.Errorf("Remove left owner rules:\n%s", save)
				}
				if !strings.Contains(save, "-A POSTROUTING -s 192.0.2.77/32 -j ACCEPT") {
					t.Errorf("Remove deleted a rule that was not ours:\n%s", save)
				}
			})
		})
	}
}

// foreignHandle returns the handle of the one rule of POSTROUTING.
func foreignHandle(t *testing.T) uint64 {
	t.Helper()
	rules, err := listRules(unix.NFPROTO_IPV4, "nat", "POSTROUTING")
	if err != nil || len(rules) != 1 {
		t.Fatalf("POSTROUTING holds %v (%v), want the one foreign rule", rules, err)
	}
	return rules[0].Handle
}

// GC of an owner no longer kept removes its record with its chains.
func TestGCForgetsJumps(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b, o := New(), fwtest.PortOwner
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		if _, ok := loadJumps(family{v4: true}, o); !ok {
			t.Fatal("no record after Ensure")
		}
		if err := b.GC(ctx, o.Plugin, o.Network, nil); err != nil {
			t.Fatalf("GC: %v", err)
		}
		if save := saveNAT(t); strings.Contains(save, "CNIS-") {
			t.Errorf("GC left owner rules:\n%s", save)
		}
		for _, f := range families {
			if _, ok := loadJumps(f, o); ok {
				t.Errorf("%s: GC left the record of the jumps", f)
			}
		}
	})
}

// TestGCOverNetlinkAlone: on an iptables-nft node GC deletes the stale
// owners' chains and the jumps into them over netlink, with no
// iptables-save or iptables-restore to fall back on (&nft{}), and keeps
// the chains of the owners kept.
func TestGCOverNetlinkAlone(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b := withWriter(&nft{})
		gone, kept := fwtest.PortOwner, fwtest.PortOwner
		gone.ContainerID, kept.ContainerID = "gone", "kept"
		for _, o := range []fwapi.Owner{gone, kept} {
			if err := b.Ensure(ctx, o, r); err != nil {
				t.Fatalf("Ensure %s: %v", o, err)
			}
		}
		if err := b.GC(ctx, gone.Plugin, gone.Network, []fwapi.Owner{kept}); err != nil {
			t.Fatalf("GC: %v", err)
		}
		save := saveNAT(t)
		for _, c := range natchain.OwnerChains(gone) {
			if strings.Contains(save, c) {
				t.Errorf("GC left chain %s of the owner not kept, or a jump to it:\n%s", c, save)
			}
		}
		if err := b.Check(ctx, kept, r); err != nil {
			t.Errorf("Check of the kept owner after GC: %v", err)
		}
	})
}

// TestRemoveAfterTableRebuilt: the nat tables are gone and made again (a
// reboot whose /run kept our records, or `nft flush ruleset`), so the
// kernel numbers rules from the start and a new owner's jumps may get the
// handles an old record names (they do here: the log shows them). Removing
// the old owner, whose chains went with the tables, must succeed and leave
// the new owner's rules whole (a Remove that trusted the record would
// delete them); its record goes with it.
func TestRemoveAfterTableRebuilt(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b, old := New(), fwtest.PortOwner
		if err := b.Ensure(ctx, old, r); err != nil {
			t.Fatalf("Ensure(old): %v", err)
		}
		recorded, _ := loadJumps(family{v4: true}, old)
		if out, err := exec.Command("nft", "flush", "ruleset").CombinedOutput(); err != nil {
			t.Fatalf("nft flush ruleset: %v: %s", err, out)
		}
		primeNAT(t)
		current := old
		current.ContainerID = "ctr-after"
		if err := b.Ensure(ctx, current, r); err != nil {
			t.Fatalf("Ensure(current): %v", err)
		}
		reused, _ := loadJumps(family{v4: true}, current)
		t.Logf("old record %v; the current owner's jumps %v", recorded, reused)
		if err := b.Remove(ctx, old); err != nil {
			t.Fatalf("Remove(old): %v", err)
		}
		if err := b.Check(ctx, current, r); err != nil {
			t.Errorf("Check(current) after Remove(old): %v", err)
		}
		if _, ok := loadJumps(family{v4: true}, old); ok {
			t.Error("Remove(old) left its record")
		}
		if err := b.Remove(ctx, current); err != nil {
			t.Fatalf("Remove(current): %v", err)
		}
		if save := saveNAT(t); strings.Contains(save, "CNIS-") {
			t.Errorf("owner rules left:\n%s", save)
		}
	})
}

// An Ensure killed between writing its record of the jumps and renaming
// it into place leaves the temporary file; the owner's Remove deletes it
// with the record. Before, it stayed (the soak found one).
func TestRemoveForgetsHalfWrittenJumps(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b, o := New(), fwtest.PortOwner
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		j, err := jumpsFileFor(family{v4: true}, o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := j.dir(true)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Overwrite(j.tmp(), []byte("PREROUTING 7\n")); err != nil {
			t.Fatal(err)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if left, err := d.Exists(j.tmp()); left || err != nil {
			t.Errorf("after Remove, the half-written record %s is there: %v, %v", j.tmp(), left, err)
		}
	})
}
