package firewall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// inEachBackend runs fn once per backend kind, each time in a fresh
// network namespace with a new backend of that kind.
func inEachBackend(t *testing.T, fn func(t *testing.T, kind string, b Backend)) {
	t.Helper()
	sandbox.Require(t)
	for _, kind := range []string{KindNFTables, KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			fwtest.InNS(t, func() {
				b, err := New(context.Background(), kind)
				if err != nil {
					t.Fatalf("New(%q): %v", kind, err)
				}
				fn(t, kind, b)
			})
		})
	}
}

func TestBackendLifecycle(t *testing.T) {
	ctx := context.Background()
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		if err := b.Usable(ctx); err != nil {
			t.Fatalf("Usable: %v", err)
		}
		owners := []Owner{fwtest.BridgeOwner, fwtest.PortOwner}
		rules := map[Owner]Rules{fwtest.BridgeOwner: fwtest.BridgeRules(t), fwtest.PortOwner: fwtest.PortRules(t, func(*PortMaps) {})}
		for _, o := range owners {
			r := rules[o]
			for i := 0; i < 2; i++ { // twice: idempotent
				if err := b.Ensure(ctx, o, r); err != nil {
					t.Fatalf("Ensure(%s) #%d: %v", o, i, err)
				}
			}
			if err := b.Check(ctx, o, r); err != nil {
				t.Errorf("Check(%s) after Ensure: %v", o, err)
			}
		}
		other := fwtest.PortOwner
		other.ContainerID = "ctr2"
		err := b.Ensure(ctx, other, fwtest.PortRules(t, func(p *PortMaps) { p.ContainerV4 = fwtest.CIDR(t, "10.88.0.3/16") }))
		if !errors.Is(err, ErrConflict) {
			t.Errorf("Ensure(second owner, same host ports) = %v, want ErrConflict", err)
		}
		changed := fwtest.PortRules(t, func(p *PortMaps) { p.Mappings = p.Mappings[:1] })
		if err := b.Check(ctx, fwtest.PortOwner, changed); err != nil {
			t.Errorf("Check(fewer mappings) = %v, want nil (a subset is in place)", err)
		}
		if err := b.Ensure(ctx, fwtest.PortOwner, changed); err != nil {
			t.Fatalf("Ensure(fewer mappings): %v", err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, rules[fwtest.PortOwner]); !errors.Is(err, ErrMissing) {
			t.Errorf("Check(old rules) after shrinking = %v, want ErrMissing", err)
		}
		for _, o := range owners {
			for i := 0; i < 2; i++ {
				if err := b.Remove(ctx, o); err != nil {
					t.Fatalf("Remove(%s) #%d: %v", o, i, err)
				}
			}
		}
		_ = b.Remove(ctx, other) // refused, but Remove is harmless
		fwtest.AssertNoOwnerRules(t)
	})
}

func TestCheckDetectsDeletedRule(t *testing.T) {
	ctx := context.Background()
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		r := fwtest.PortRules(t, func(p *PortMaps) { p.ContainerV6 = nil })
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		defer b.Remove(ctx, fwtest.PortOwner)
		var cmd *exec.Cmd
		if kind == KindNFTables {
			cmd = exec.Command("nft", "flush", "chain", "ip", "cnisuite_portmap", nftmodel.ChainName(nftmodel.PrefixDNAT, fwtest.PortOwner))
		} else {
			cmd = exec.Command("iptables", "-t", "nat", "-D", natchain.ChainName(natchain.PrefixDNAT, fwtest.PortOwner), "1")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, out)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); !errors.Is(err, ErrMissing) {
			t.Errorf("Check after a rule was deleted = %v, want ErrMissing", err)
		}
	})
}

func TestGC(t *testing.T) {
	ctx := context.Background()
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		var owners []Owner
		for i, id := range []string{"a", "b", "c"} {
			o := Owner{Plugin: PluginBridge, Network: "gcnet", ContainerID: id, IfName: "eth0"}
			addr := fwtest.CIDR(t, "10.99.0."+string(rune('2'+i))+"/24")
			if err := b.Ensure(ctx, o, Rules{Masq: []Masq{{Addr: *addr}}}); err != nil {
				t.Fatalf("Ensure(%s): %v", o, err)
			}
			owners = append(owners, o)
		}
		otherNet := Owner{Plugin: PluginBridge, Network: "othernet", ContainerID: "a", IfName: "eth0"}
		if err := b.Ensure(ctx, otherNet, Rules{Masq: []Masq{{Addr: *fwtest.CIDR(t, "10.98.0.2/24")}}}); err != nil {
			t.Fatalf("Ensure(%s): %v", otherNet, err)
		}
		keep := []Owner{{ContainerID: "b", IfName: "eth0"}}
		if err := b.GC(ctx, PluginBridge, "gcnet", keep); err != nil {
			t.Fatalf("GC: %v", err)
		}
		for _, o := range append(owners, otherNet) {
			want := o.ContainerID == "b" || o.Network == "othernet"
			got := ownerPresent(t, kind, o)
			if got != want {
				t.Errorf("after GC, %s present = %v, want %v", o, got, want)
			}
		}
		for _, o := range append(owners, otherNet) {
			_ = b.Remove(ctx, o)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

func ownerPresent(t *testing.T, kind string, o Owner) bool {
	if kind == KindIPTables {
		err := exec.Command("iptables", "-w", "-t", "nat", "-S", natchain.ChainName(natchain.PrefixMasq, o)).Run()
		return err == nil
	}
	return strings.Contains(fwtest.Ruleset(t), nftmodel.ChainName(nftmodel.PrefixMasq, o))
}

// TestEnsureTwiceDeletesNothing shows that a repeated Ensure of the same
// rules leaves every rule in place (same handles): it deletes nothing, on
// every path (netlink; nft -f for spoof checks; iptables-nft).
func TestEnsureTwiceDeletesNothing(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		kind  string
		owner Owner
		rules Rules
	}{
		{"nftables_portmap", KindNFTables, fwtest.PortOwner, fwtest.PortRules(t, func(*PortMaps) {})},
		{"nftables_bridge_spoofcheck", KindNFTables, fwtest.BridgeOwner, fwtest.BridgeRules(t)},
		{"iptables_portmap", KindIPTables, fwtest.PortOwner, fwtest.PortRules(t, func(*PortMaps) {})},
		{"iptables_bridge", KindIPTables, fwtest.BridgeOwner, fwtest.BridgeRules(t)},
		{"nftables_icc_off", KindNFTables, fwtest.BridgeOwner, fwtest.IsolationRules(func(i *Isolation) { i.NoICC = true })},
		{"nftables_isolate_strict", KindNFTables, fwtest.BridgeOwner, fwtest.IsolationRules(func(i *Isolation) { i.Isolate = "strict" })},
		{"iptables_isolate_icc_off", KindIPTables, fwtest.BridgeOwner, fwtest.IsolationRules(func(i *Isolation) { i.NoICC, i.Isolate = true, "true" })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fwtest.InNS(t, func() {
				b, err := New(ctx, tc.kind)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2; i++ {
					if err := b.Ensure(ctx, tc.owner, tc.rules); err != nil {
						t.Fatalf("Ensure #%d: %v", i, err)
					}
				}
				first := fwtest.RulesetHandles(t)
				if err := b.Ensure(ctx, tc.owner, tc.rules); err != nil {
					t.Fatalf("Ensure #3: %v", err)
				}
				if again := fwtest.RulesetHandles(t); again != first {
					t.Errorf("a repeated Ensure rewrote rules:\n--- before\n%s\n--- after\n%s", first, again)
				}
				if err := b.Remove(ctx, tc.owner); err != nil {
					t.Fatalf("Remove: %v", err)
				}
				fwtest.AssertNoOwnerRules(t)
			})
		})
	}
}

// TestMapped reads the host ports back from the rules of each backend.
func TestMapped(t *testing.T) {
	ctx := context.Background()
	r := fwtest.PortRules(t, func(p *PortMaps) {
		p.Mappings = append(p.Mappings, PortMapping{HostPort: 9000, ContainerPort: 90, Protocol: "udp", HostIP: net.ParseIP("192.0.2.10")})
	})
	want := map[string]bool{"tcp 8080 <nil>": true, "udp 5353 <nil>": true, "udp 9000 192.0.2.10": true}
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		got, err := b.(MappingReader).Mapped(ctx, fwtest.PortOwner)
		if err != nil {
			t.Fatalf("Mapped: %v", err)
		}
		seen := map[string]bool{}
		for _, m := range got {
			k := fmt.Sprintf("%s %d %v", m.Protocol, m.HostPort, m.HostIP)
			if !want[k] {
				t.Errorf("Mapped returned %s, not a mapping of the rules", k)
			}
			seen[k] = true
		}
		if len(seen) != len(want) {
			t.Errorf("Mapped = %v, want each of %v", got, want)
		}
		_ = b.Remove(ctx, fwtest.PortOwner)
	})
}
