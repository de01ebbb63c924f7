package firewall

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// inNS runs fn inside a fresh network namespace, so each test starts from
// an empty ruleset.
func inNS(t *testing.T, fn func()) {
	t.Helper()
	n := sandbox.NewNS(t)
	if err := n.Do(func() error { fn(); return nil }); err != nil {
		t.Fatalf("entering test namespace: %v", err)
	}
}

func ruleset(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return string(out)
}

func bridgeRules(t *testing.T) Rules {
	mac := []byte{0x0a, 0x58, 0, 0, 0, 2}
	return Rules{
		Masq:       []Masq{{Addr: *cidr(t, "10.88.0.2/16")}, {Addr: *cidr(t, "fd00:88::2/64")}},
		SpoofCheck: &SpoofCheck{HostIface: "veth1234", MAC: mac, IPs: []net.IP{net.ParseIP("10.88.0.2")}},
	}
}

func TestBackendLifecycle(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	for _, kind := range []string{KindNFTables, KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			inNS(t, func() {
				b, err := New(ctx, kind)
				if err != nil {
					t.Fatalf("New(%q): %v", kind, err)
				}
				if err := b.Usable(ctx); err != nil {
					t.Fatalf("Usable: %v", err)
				}
				owners := []Owner{bridgeOwner, portOwner}
				rules := map[Owner]Rules{bridgeOwner: bridgeRules(t), portOwner: portRules(t, func(*PortMaps) {})}
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
				other := portOwner
				other.ContainerID = "ctr2"
				err = b.Ensure(ctx, other, portRules(t, func(p *PortMaps) { p.ContainerV4 = cidr(t, "10.88.0.3/16") }))
				if kind == KindNFTables && !errors.Is(err, ErrConflict) {
					t.Errorf("Ensure(second owner, same host ports) = %v, want ErrConflict", err)
				}
				changed := portRules(t, func(p *PortMaps) { p.Mappings = p.Mappings[:1] })
				if err := b.Check(ctx, portOwner, changed); err != nil {
					t.Errorf("Check(fewer mappings) = %v, want nil (a subset is in place)", err)
				}
				if err := b.Ensure(ctx, portOwner, changed); err != nil {
					t.Fatalf("Ensure(fewer mappings): %v", err)
				}
				if err := b.Check(ctx, portOwner, rules[portOwner]); !errors.Is(err, ErrMissing) {
					t.Errorf("Check(old rules) after shrinking = %v, want ErrMissing", err)
				}
				for _, o := range owners {
					for i := 0; i < 2; i++ {
						if err := b.Remove(ctx, o); err != nil {
							t.Fatalf("Remove(%s) #%d: %v", o, i, err)
						}
					}
				}
				_ = b.Remove(ctx, other) // may exist with iptables, which allows duplicates
				assertNoOwnerRules(t)
			})
		})
	}
}

// assertNoOwnerRules fails when any owner chain or element is left.
func assertNoOwnerRules(t *testing.T) {
	t.Helper()
	rs := ruleset(t)
	for _, marker := range []string{"cnisuite 0", "CNIS-", "jump pm", "jump mq", "jump sc", "jump pmq"} {
		if strings.Contains(rs, marker) {
			t.Errorf("ruleset still holds %q:\n%s", marker, rs)
			return
		}
	}
}

func TestCheckDetectsDeletedRule(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	for _, kind := range []string{KindNFTables, KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			inNS(t, func() {
				b, _ := New(ctx, kind)
				r := portRules(t, func(p *PortMaps) { p.ContainerV6 = nil })
				if err := b.Ensure(ctx, portOwner, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				defer b.Remove(ctx, portOwner)
				var cmd *exec.Cmd
				if kind == KindNFTables {
					cmd = exec.Command("nft", "flush", "chain", "ip", "cnisuite_portmap", nftChainName(nftPrefixDNAT, portOwner))
				} else {
					cmd = exec.Command("iptables", "-t", "nat", "-D", iptChainName(iptPrefixDNAT, portOwner), "1")
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%v: %v: %s", cmd, err, out)
				}
				if err := b.Check(ctx, portOwner, r); !errors.Is(err, ErrMissing) {
					t.Errorf("Check after a rule was deleted = %v, want ErrMissing", err)
				}
			})
		})
	}
}

func TestGC(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	for _, kind := range []string{KindNFTables, KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			inNS(t, func() {
				b, _ := New(ctx, kind)
				var owners []Owner
				for i, id := range []string{"a", "b", "c"} {
					o := Owner{Plugin: PluginBridge, Network: "gcnet", ContainerID: id, IfName: "eth0"}
					addr := cidr(t, "10.99.0."+string(rune('2'+i))+"/24")
					if err := b.Ensure(ctx, o, Rules{Masq: []Masq{{Addr: *addr}}}); err != nil {
						t.Fatalf("Ensure(%s): %v", o, err)
					}
					owners = append(owners, o)
				}
				otherNet := Owner{Plugin: PluginBridge, Network: "othernet", ContainerID: "a", IfName: "eth0"}
				if err := b.Ensure(ctx, otherNet, Rules{Masq: []Masq{{Addr: *cidr(t, "10.98.0.2/24")}}}); err != nil {
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
				assertNoOwnerRules(t)
			})
		})
	}
}

func ownerPresent(t *testing.T, kind string, o Owner) bool {
	if kind == KindIPTables {
		_, err := iptFor(true).list(context.Background(), iptChainName(iptPrefixMasq, o))
		return err == nil
	}
	return strings.Contains(ruleset(t), nftChainName(nftPrefixMasq, o))
}
