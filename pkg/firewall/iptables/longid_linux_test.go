package iptables

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/internal/fwtest"
	"cnisuite/test/sandbox"
)

// TestLongIDRestore: an owner with a 1,000-byte container ID is written by
// iptables-restore too (user conditions), which refused the unbounded tag
// ("Parameter too long"); its jumps carry the bounded tag, which names the
// owner's digest, and Check and Remove find them.
func TestLongIDRestore(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	o := fwtest.PortOwner
	o.ContainerID = strings.Repeat("c", 1000)
	fwtest.InNS(t, func() {
		primeNAT(t)
		b := New()
		r := fwtest.PortRules(t, func(p *fwtypes.PortMaps) { p.ContainerV6, p.ConditionsV4 = nil, []string{"!", "-i", "cni0"} })
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		if b.writes.restore != 1 {
			t.Errorf("Ensure wrote %+v, want one iptables-restore", b.writes)
		}
		if err := b.Check(ctx, o, r); err != nil {
			t.Errorf("Check: %v", err)
		}
		out, err := exec.Command("iptables-save", "-t", "nat").Output()
		if want := "--comment \"cnisuite " + o.Hash()[:32] + " portmap/net1/ccc"; err != nil || !strings.Contains(string(out), want) {
			t.Errorf("iptables-save holds no jump tagged %s… (%v):\n%s", want, err, out)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// TestOldLongTag: the jumps of a pod attached by an earlier version, whose
// 800-byte container ID iptables cut short in the tag, are found by Check
// and removed by Remove.
func TestOldLongTag(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	o := fwtest.PortOwner
	o.ContainerID = strings.Repeat("c", 800)
	r := fwtest.PortRules(t, func(p *fwtypes.PortMaps) { p.ContainerV6 = nil })
	fwtest.InNS(t, func() {
		primeNAT(t)
		old := strings.ReplaceAll(iptEnsurePayload(o, iptDesired(o, r, true), nil),
			iptQuote(entryTag(o)), iptQuote("cnisuite "+o.String()))
		if err := iptFor(true).restore(ctx, old); err != nil {
			t.Fatalf("writing the earlier version's rules: %v", err)
		}
		b := New()
		if err := b.Check(ctx, o, r); err != nil {
			t.Errorf("Check of the earlier version's rules: %v", err)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}
