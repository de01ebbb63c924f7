package firewall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

var handleRE = regexp.MustCompile(` # handle \d+`)

// listing returns the ruleset without handles.
func listing(t *testing.T) string {
	t.Helper()
	return handleRE.ReplaceAllString(ruleset(t), "")
}

// TestNetlinkMatchesScript proves that the rules Ensure writes over
// netlink are the ones the rendered nft script (the golden files) writes:
// the same scenario applied both ways, in two fresh namespaces, lists the
// same in `nft list ruleset`. It also proves that the skeletons written
// either way read back as intact, so that a later Ensure deletes nothing.
func TestNetlinkMatchesScript(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	cases := append(ruleCases(t), []struct {
		name  string
		owner Owner
		rules Rules
	}{
		{"masq_unaligned_prefix", bridgeOwner, Rules{Masq: []Masq{{Addr: *cidr(t, "10.88.4.2/22")}, {Addr: *cidr(t, "fd00:88::2/60")}}}},
		{"portmap_unaligned_prefix", portOwner, portRules(t, func(p *PortMaps) {
			p.ContainerV4, p.ContainerV6 = cidr(t, "10.88.4.2/22"), cidr(t, "fd00:88::2/61")
		})},
	}...)
	for _, tc := range cases {
		desired := nftDesired(tc.owner, tc.rules)
		if !buildable(desired) {
			continue // conditions and spoof checks always go through nft -f
		}
		t.Run(tc.name, func(t *testing.T) {
			var viaNetlink, viaScript string
			inNS(t, func() {
				if err := newNFTables().Ensure(ctx, tc.owner, tc.rules); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				viaNetlink = listing(t)
				assertSkeletonsIntact(t, desired)
			})
			inNS(t, func() {
				if err := runNFT(ctx, "nft", strings.ReplaceAll(Render(KindNFTables, tc.owner, tc.rules), "# localnet guard (nft)\n", "")); err != nil {
					t.Fatalf("nft -f: %v", err)
				}
				viaScript = listing(t)
				assertSkeletonsIntact(t, desired)
			})
			if viaNetlink != viaScript {
				t.Errorf("netlink and nft -f write different rules:\n--- netlink\n%s\n--- nft -f\n%s", viaNetlink, viaScript)
			}
		})
	}
}

func assertSkeletonsIntact(t *testing.T, desired []nftChain) {
	t.Helper()
	conn, err := dialNL()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.close()
	for _, c := range desired {
		if ok, err := conn.skeletonIntact(nftSkeleton(c.table)); err != nil || !ok {
			t.Errorf("skeleton of %s reads as not intact (%v)", c.table, err)
		}
	}
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
		{"nftables_portmap", KindNFTables, portOwner, portRules(t, func(*PortMaps) {})},
		{"nftables_bridge_spoofcheck", KindNFTables, bridgeOwner, bridgeRules(t)},
		{"iptables_portmap", KindIPTables, portOwner, portRules(t, func(*PortMaps) {})},
		{"iptables_bridge", KindIPTables, bridgeOwner, bridgeRules(t)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inNS(t, func() {
				b, err := New(ctx, tc.kind)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2; i++ {
					if err := b.Ensure(ctx, tc.owner, tc.rules); err != nil {
						t.Fatalf("Ensure #%d: %v", i, err)
					}
				}
				first := rulesetHandles(t)
				if err := b.Ensure(ctx, tc.owner, tc.rules); err != nil {
					t.Fatalf("Ensure #3: %v", err)
				}
				if again := rulesetHandles(t); again != first {
					t.Errorf("a repeated Ensure rewrote rules:\n--- before\n%s\n--- after\n%s", first, again)
				}
				if err := b.Remove(ctx, tc.owner); err != nil {
					t.Fatalf("Remove: %v", err)
				}
				assertNoOwnerRules(t)
			})
		})
	}
}

func rulesetHandles(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "-a", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft -a list ruleset: %v: %s", err, out)
	}
	return string(out)
}

// TestElemKeys checks the key encoding of each map against nft's.
func TestElemKeys(t *testing.T) {
	tests := []struct {
		table nftTable
		el    nftElem
		want  string
	}{
		{nftMasq4, nftElem{"sources", "10.88.0.2"}, "0a580002"},
		{nftPort4, nftElem{"ports", "tcp . 8080"}, "06000000" + "1f900000"},
		{nftPort4, nftElem{"hostip_ports", "192.0.2.10 . udp . 53"}, "c000020a" + "11000000" + "00350000"},
		{nftPort6, nftElem{"hairpins", "fd00::2 . sctp . 80"}, "fd000000000000000000000000000002" + "84000000" + "00500000"},
		{nftSpoof, nftElem{"ifaces", `"veth1"`}, "7665746831" + strings.Repeat("00", 11)},
	}
	for _, tc := range tests {
		got, err := nftElemKey(tc.table, tc.el)
		if err != nil || net.HardwareAddr(got).String() != net.HardwareAddr(hexBytes(t, tc.want)).String() {
			t.Errorf("nftElemKey(%s, %v) = %x, %v; want %s", tc.table, tc.el, got, err, tc.want)
		}
	}
	if _, err := nftElemKey(nftPort4, nftElem{"ports", "tcp . 99999"}); err == nil {
		t.Error("nftElemKey accepted port 99999")
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

// TestMapped reads the host ports back from the rules of each backend.
func TestMapped(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	r := portRules(t, func(p *PortMaps) {
		p.Mappings = append(p.Mappings, PortMapping{HostPort: 9000, ContainerPort: 90, Protocol: "udp", HostIP: net.ParseIP("192.0.2.10")})
	})
	want := map[string]bool{"tcp 8080 <nil>": true, "udp 5353 <nil>": true, "udp 9000 192.0.2.10": true}
	for _, kind := range []string{KindNFTables, KindIPTables} {
		t.Run(kind, func(t *testing.T) {
			inNS(t, func() {
				b, _ := New(ctx, kind)
				if err := b.Ensure(ctx, portOwner, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				got, err := b.(MappingReader).Mapped(ctx, portOwner)
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
				_ = b.Remove(ctx, portOwner)
			})
		})
	}
}

// TestFreshEnsureDeletesNothing: the transaction of a first ADD, skeleton
// included, deletes nothing (so closing its socket costs no RCU wait and
// no helper process); a Remove's does.
func TestFreshEnsureDeletesNothing(t *testing.T) {
	sandbox.Require(t)
	inNS(t, func() {
		conn, err := dialNL()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.close()
		r := portRules(t, func(*PortMaps) {})
		desired := nftDesired(portOwner, r)
		batch := &nlBatch{}
		if err := conn.ensureSkeletons(batch, []nftSkel{nftSkeleton(nftPort4), nftSkeleton(nftPort6), nftLocalnetSkel()}); err != nil {
			t.Fatal(err)
		}
		batch.ensureBatch(desired, nil, false)
		if batch.deletes() {
			t.Error("the first ADD's transaction counts as deleting")
		}
		if err := conn.apply(batch); err != nil {
			t.Fatalf("apply: %v", err)
		}
		existing, err := conn.readChains(nftOwnerChains(portOwner))
		if err != nil {
			t.Fatal(err)
		}
		remove := &nlBatch{}
		for _, e := range existing {
			remove.removeChain(e, false)
		}
		if !remove.deletes() {
			t.Error("a Remove's transaction does not count as deleting")
		}
	})
}

// TestCheckDetectsDeletedJump: with iptables, a jump into an owner chain
// deleted behind our back makes Check fail.
func TestCheckDetectsDeletedJump(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	inNS(t, func() {
		b, _ := New(ctx, KindIPTables)
		r := portRules(t, func(p *PortMaps) { p.ContainerV6 = nil })
		if err := b.Ensure(ctx, portOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		defer b.Remove(ctx, portOwner)
		rules, err := iptFor(true).list(ctx, "OUTPUT")
		if err != nil {
			t.Fatal(err)
		}
		var jump string
		for _, l := range rules {
			if strings.Contains(l, iptChainName(iptPrefixDNAT, portOwner)) {
				jump = l
			}
		}
		if jump == "" {
			t.Fatalf("no jump to the DNAT chain in OUTPUT: %q", rules)
		}
		if err := iptFor(true).restore(ctx, "*nat\n-D OUTPUT "+jump+"\nCOMMIT\n"); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(ctx, portOwner, r); !errors.Is(err, ErrMissing) {
			t.Errorf("Check after the OUTPUT jump was deleted = %v, want ErrMissing", err)
		}
	})
}
