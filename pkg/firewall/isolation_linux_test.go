package firewall

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
)

// isoOwner is container id of network isonet with strict isolation and icc
// off, on bridge isobr.
func isoOwner(id string, n int) (Owner, Rules) {
	o := Owner{Plugin: PluginBridge, Network: "isonet", ContainerID: id, IfName: "eth0"}
	return o, Rules{Isolation: &fwapi.Isolation{
		Bridge: "isobr", HostIface: "veth" + id, NoICC: true, Isolate: fwapi.IsolateStrict, Uplinks: []string{"eth0"},
		IPs: []net.IP{net.IPv4(10, 77, 0, byte(n)), net.ParseIP("fd00:77::" + string(rune('0'+n)))},
	}}
}

// netChainsPresent reports which of the network's shared chains exist.
func netChainsPresent(t *testing.T, o Owner) []string {
	var out []string
	rs := fwtest.Ruleset(t)
	for _, c := range nftmodel.NetChains(o) {
		if strings.Contains(rs, "chain "+c.Name+" {") {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestIsolationLifecycle: the network's shared chains stay while any owner
// of the network holds them and go with the last one, by Remove or by GC;
// Check sees a shared chain emptied behind our back.
func TestIsolationLifecycle(t *testing.T) {
	ctx := context.Background()
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		a, ra := isoOwner("a", 2)
		c, rc := isoOwner("c", 3)
		for _, x := range []struct {
			o Owner
			r Rules
		}{{a, ra}, {c, rc}, {a, ra}} {
			if err := b.Ensure(ctx, x.o, x.r); err != nil {
				t.Fatalf("Ensure(%s): %v", x.o, err)
			}
		}
		if got := netChainsPresent(t, a); len(got) != 3 {
			t.Fatalf("network chains after two ADDs = %v, want 3", got)
		}
		if err := b.Remove(ctx, a); err != nil {
			t.Fatalf("Remove(a): %v", err)
		}
		if got := netChainsPresent(t, a); len(got) != 3 {
			t.Errorf("network chains with one owner left = %v, want all 3", got)
		}
		if err := b.Check(ctx, c, rc); err != nil {
			t.Errorf("Check(c) after Remove(a) = %v, want nil", err)
		}
		flush := exec.Command("nft", "flush", "chain", "inet", "cnisuite_isolate", nftmodel.NetChainName(nftmodel.PrefixIsoFrom, c))
		if out, err := flush.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", flush, err, out)
		}
		if err := b.Check(ctx, c, rc); !errors.Is(err, ErrMissing) {
			t.Errorf("Check(c) with its network chain flushed = %v, want ErrMissing", err)
		}
		if err := b.Ensure(ctx, a, ra); err != nil {
			t.Fatalf("Ensure(a) again: %v", err)
		}
		if err := b.Remove(ctx, c); err != nil {
			t.Fatalf("Remove(c): %v", err)
		}
		if err := b.GC(ctx, PluginBridge, "isonet", nil); err != nil {
			t.Fatalf("GC: %v", err)
		}
		if got := netChainsPresent(t, a); len(got) != 0 {
			t.Errorf("network chains after the last owner went = %v, want none", got)
		}
		rs := fwtest.Ruleset(t)
		for _, prefix := range []string{"ic-", "icd-", "icr-", "ih-"} {
			if strings.Contains(rs, "chain "+prefix) {
				t.Errorf("owner chain %s… left:\n%s", prefix, rs)
			}
		}
	})
}

// TestIsolationOddBridgeName: a bridge name that Go's %q would escape (a
// byte-order mark) still names its map elements in the comments nft
// writes: Check finds the rules, Remove leaves no chain, element or rule.
func TestIsolationOddBridgeName(t *testing.T) {
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		ctx := context.Background()
		o, r := isoOwner("odd", 2)
		r.Isolation.Bridge = "\ufeffbr"
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		if err := b.Check(ctx, o, r); err != nil {
			t.Errorf("Check: %v", err)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if left := netChainsPresent(t, o); len(left) > 0 {
			t.Errorf("Remove left the network chains %v:\n%s", left, fwtest.Ruleset(t))
		}
		fwtest.AssertNoOwnerRules(t)
	})
}
