package iptables

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
	"cnisuite/test/userns"
)

func TestIPTPayloads(t *testing.T) {
	r := fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}}
	desired := natchain.Desired(fwtest.BridgeOwner, r, true)
	existing := map[string][]string{desired[0].Name: natchain.Sources(desired[0].Rules)}
	moved := fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.3/16")}}}
	golden.Check(t, "ipt_update_masq", natchain.EnsurePayload(fwtest.BridgeOwner, natchain.Desired(fwtest.BridgeOwner, moved, true), existing, nil))
	golden.Check(t, "ipt_remove_masq", natchain.RemovePayload(fwtest.BridgeOwner, existing))
	pd := natchain.Desired(fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {}), true)
	pe := natchain.WithCompanions(fwtest.PortOwner, map[string][]string{pd[0].Name: natchain.Sources(pd[0].Rules)})
	golden.Check(t, "ipt_remove_portmap", natchain.RemovePayload(fwtest.PortOwner, pe))
}

// TestCheckDetectsDeletedJump: with iptables, a jump into an owner chain
// deleted behind our back makes Check fail.
func TestCheckDetectsDeletedJump(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	inNS(t, func() {
		b := New()
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		defer b.Remove(ctx, fwtest.PortOwner)
		ipt := newLegacy("").v4
		rules, err := ipt.list(ctx, "OUTPUT")
		if err != nil {
			t.Fatal(err)
		}
		var jump string
		for _, l := range rules {
			if strings.Contains(l, natchain.ChainName(natchain.PrefixDNAT, fwtest.PortOwner)) {
				jump = l
			}
		}
		if jump == "" {
			t.Fatalf("no jump to the DNAT chain in OUTPUT: %q", rules)
		}
		if err := ipt.restoreNoflush(ctx, "*nat\n-D OUTPUT "+jump+"\nCOMMIT\n"); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); !errors.Is(err, fwapi.ErrMissing) {
			t.Errorf("Check after the OUTPUT jump was deleted = %v, want fwapi.ErrMissing", err)
		}
	})
}
