package iptables

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
	"cnisuite/test/userns"
)

// nodeKinds are the writers of the kinds of iptables node, each with the
// command that saves its table nat.
var nodeKinds = []struct {
	name, save string
	w          func() writer
}{
	{"iptables-nft", "iptables-save", func() writer { return &nft{restore: newLegacy("")} }},
	{"iptables-legacy", "iptables-legacy-save", func() writer { return newLegacy("-legacy") }},
}

// savedNAT returns `<save> -t nat`.
func savedNAT(t *testing.T, save string) string {
	t.Helper()
	out, err := exec.Command(save, "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -t nat: %v: %s", save, err, out)
	}
	return string(out)
}

// TestLongID: an owner with a 1,000-byte container ID gets its chains and
// jumps on both kinds of node, over netlink and through iptables-restore
// (user conditions, which only it writes: it refused the unbounded tag
// with "Parameter too long"); the jumps carry the bounded tag, which names
// the owner's digest, and Check and Remove find them.
func TestLongID(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	o := fwtest.PortOwner
	o.ContainerID = strings.Repeat("c", 1000)
	for _, kind := range nodeKinds {
		for name, conds := range map[string][]string{"conditions": {"!", "-i", "cni0"}, "plain": nil} {
			t.Run(kind.name+"/"+name, func(t *testing.T) {
				inNS(t, func() {
					b := withWriter(kind.w())
					r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ConditionsV4 = conds })
					for i := 0; i < 2; i++ { // the second over the first's chains
						if err := b.Ensure(ctx, o, r); err != nil {
							t.Fatalf("Ensure #%d: %v", i, err)
						}
					}
					if err := b.Check(ctx, o, r); err != nil {
						t.Errorf("Check: %v", err)
					}
					want := "--comment \"cnisuite " + o.Hash()[:32] + " portmap/net1/ccc"
					if save := savedNAT(t, kind.save); !strings.Contains(save, want) {
						t.Errorf("%s holds no jump tagged %s…:\n%s", kind.save, want, save)
					}
					if err := b.Remove(ctx, o); err != nil {
						t.Fatalf("Remove: %v", err)
					}
					if save := savedNAT(t, kind.save); strings.Contains(save, "CNIS-") {
						t.Errorf("Remove left owner rules:\n%s", save)
					}
				})
			})
		}
	}
}
