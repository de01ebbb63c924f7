package iptables

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/internal/fwtest"
	"cnisuite/test/golden"
	"cnisuite/test/sandbox"
)

func TestMain(m *testing.M) { fwtest.Main(m) }

func TestIPTPayloads(t *testing.T) {
	r := fwtypes.Rules{Masq: []fwtypes.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}}
	desired := iptDesired(fwtest.BridgeOwner, r, true)
	existing := map[string][]string{desired[0].chain: desired[0].rules}
	moved := fwtypes.Rules{Masq: []fwtypes.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.3/16")}}}
	golden.Check(t, "ipt_update_masq", iptEnsurePayload(fwtest.BridgeOwner, iptDesired(fwtest.BridgeOwner, moved, true), existing))
	golden.Check(t, "ipt_remove_masq", iptRemovePayload(fwtest.BridgeOwner, existing))
	pd := iptDesired(fwtest.PortOwner, fwtest.PortRules(t, func(*fwtypes.PortMaps) {}), true)
	pe := withCompanions(fwtest.PortOwner, map[string][]string{pd[0].chain: pd[0].rules})
	golden.Check(t, "ipt_remove_portmap", iptRemovePayload(fwtest.PortOwner, pe))
}

func TestSplitSpec(t *testing.T) {
	got := splitSpec(`-m comment --comment "cnisuite a/b" -j X`)
	want := []string{"-m", "comment", "--comment", "cnisuite a/b", "-j", "X"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("splitSpec = %q, want %q", got, want)
	}
	for _, s := range []string{"cnisuite a/b", `e"x`, `a\b`, "\ufeffbr", `\"`} {
		got := splitSpec("-m comment --comment " + iptQuote(s) + " -j X")
		if len(got) != 6 || got[3] != s {
			t.Errorf("splitSpec(iptQuote(%q)) = %q", s, got)
		}
	}
}

// TestCheckDetectsDeletedJump: with iptables, a jump into an owner chain
// deleted behind our back makes Check fail.
func TestCheckDetectsDeletedJump(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	fwtest.InNS(t, func() {
		b := New()
		r := fwtest.PortRules(t, func(p *fwtypes.PortMaps) { p.ContainerV6 = nil })
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		defer b.Remove(ctx, fwtest.PortOwner)
		rules, err := iptFor(true).list(ctx, "OUTPUT")
		if err != nil {
			t.Fatal(err)
		}
		var jump string
		for _, l := range rules {
			if strings.Contains(l, ChainName(PrefixDNAT, fwtest.PortOwner)) {
				jump = l
			}
		}
		if jump == "" {
			t.Fatalf("no jump to the DNAT chain in OUTPUT: %q", rules)
		}
		if err := iptFor(true).restore(ctx, "*nat\n-D OUTPUT "+jump+"\nCOMMIT\n"); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); !errors.Is(err, fwtypes.ErrMissing) {
			t.Errorf("Check after the OUTPUT jump was deleted = %v, want fwtypes.ErrMissing", err)
		}
	})
}

func TestChainNames(t *testing.T) {
	for _, p := range []string{PrefixMasq, PrefixDNAT, PrefixHairpin} {
		if n := ChainName(p, fwtest.PortOwner); len(n) != 28 {
			t.Errorf("ChainName(%q) = %q: %d characters, want 28", p, n, len(n))
		}
	}
}
