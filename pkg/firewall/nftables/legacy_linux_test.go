package nftables

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// TestUpgradeFromChainLayout: attachments an earlier version wrote, a
// chain of rules per owner behind verdict maps (testdata/legacy holds that
// version's scripts, its golden files as they were), keep working after
// the upgrade. A new attachment's ADD rewrites the skeleton around them;
// CHECK passes them as they are; their next Ensure moves them to the data
// maps in one transaction; and Remove, before or after that move, leaves
// nothing of them.
func TestUpgradeFromChainLayout(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	for _, tc := range fwtest.RuleCases(t) {
		script, err := os.ReadFile("testdata/legacy/" + tc.Name + ".nft")
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, migrate := range []bool{false, true} {
			name := tc.Name + "/remove"
			if migrate {
				name = tc.Name + "/migrate_then_remove"
			}
			t.Run(name, func(t *testing.T) {
				fwtest.InNS(t, func() {
					upgrade(ctx, t, tc, string(script), migrate)
				})
			})
		}
	}
}

func upgrade(ctx context.Context, t *testing.T, tc fwtest.Case, script string, migrate bool) {
	b := New()
	if err := nftmodel.RunScript(ctx, script); err != nil {
		t.Fatalf("the earlier version's script: %v", err)
	}
	if err := b.Check(ctx, tc.Owner, tc.Rules); err != nil {
		t.Errorf("CHECK of the earlier version's attachment: %v", err)
	}
	other := fwapi.Owner{Plugin: tc.Owner.Plugin, Network: tc.Owner.Network, ContainerID: "upgraded", IfName: "eth0"}
	if err := b.Ensure(ctx, other, neighbour(tc.Rules)); err != nil {
		t.Fatalf("ADD of a new attachment beside it: %v", err)
	}
	if err := b.Check(ctx, tc.Owner, tc.Rules); err != nil {
		t.Errorf("CHECK of the earlier attachment after a new one's ADD: %v", err)
	}
	if migrate {
		if err := b.Ensure(ctx, tc.Owner, tc.Rules); err != nil {
			t.Fatalf("Ensure of the earlier attachment: %v", err)
		}
		if rs := fwtest.Listing(t); strings.Contains(rs, ": jump ") {
			t.Errorf("a verdict map element is left after the move to data maps:\n%s", rs)
		}
		if err := nftmodel.Check(mustDial(t), tc.Owner, Chains(tc.Owner, tc.Rules)); err != nil {
			t.Errorf("CHECK in the data-map layout after the move: %v", err)
		}
	}
	for _, o := range []fwapi.Owner{tc.Owner, other} {
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove(%s): %v", o, err)
		}
	}
	fwtest.AssertNoOwnerRules(t)
}

// neighbour is another attachment's rules beside rules: other host ports
// and container addresses, the same network.
func neighbour(r fwapi.Rules) fwapi.Rules {
	out := fwapi.Rules{}
	for _, m := range r.Masq {
		m.Addr.IP = nextIP(m.Addr.IP)
		out.Masq = append(out.Masq, m)
	}
	if pm := r.PortMaps; pm != nil {
		c := *pm
		c.Mappings = nil
		for _, m := range pm.Mappings {
			m.HostPort += 1000
			c.Mappings = append(c.Mappings, m)
		}
		for _, n := range []**net.IPNet{&c.ContainerV4, &c.ContainerV6} {
			if *n != nil {
				*n = &net.IPNet{IP: nextIP((*n).IP), Mask: (*n).Mask}
			}
		}
		out.PortMaps = &c
	}
	return out
}

func nextIP(ip net.IP) net.IP {
	out := append(net.IP{}, ip...)
	out[len(out)-1]++
	return out
}

func mustDial(t *testing.T) *netfilter.Conn {
	t.Helper()
	conn, err := netfilter.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
