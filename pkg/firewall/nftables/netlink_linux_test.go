package nftables

import (
	"context"
	"net"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// scriptWithGuard is the nft script of an owner with no rules yet,
// localnet guard included: what Ensure writes, as text.
func scriptWithGuard(o fwtypes.Owner, r fwtypes.Rules) string {
	s := Script(o, r)
	if r.NeedsLocalnetGuard() {
		s += strings.Join(nftchain.LocalnetGuard().Lines(), "\n") + "\n"
	}
	return s
}

// TestNetlinkMatchesScript proves that the rules Ensure writes over
// netlink are the ones the rendered nft script (the golden files) writes:
// the same scenario applied both ways, in two fresh namespaces, lists the
// same in `nft list ruleset`. It also proves that the skeletons written
// either way read back as intact, so that a later Ensure deletes nothing.
func TestNetlinkMatchesScript(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	cases := append(fwtest.RuleCases(t), []fwtest.Case{
		{Name: "masq_unaligned_prefix", Owner: fwtest.BridgeOwner, Rules: fwtypes.Rules{Masq: []fwtypes.Masq{{Addr: *fwtest.CIDR(t, "10.88.4.2/22")}, {Addr: *fwtest.CIDR(t, "fd00:88::2/60")}}}},
		{Name: "portmap_unaligned_prefix", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(p *fwtypes.PortMaps) {
			p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, "10.88.4.2/22"), fwtest.CIDR(t, "fd00:88::2/61")
		})},
		{Name: "spoofcheck_adjacent_addresses", Owner: fwtest.BridgeOwner, Rules: fwtypes.Rules{SpoofCheck: &fwtypes.SpoofCheck{
			HostIface: "veth1234", MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0x58, 0x00, 0x02},
			IPs: []net.IP{net.ParseIP("10.88.0.3"), net.ParseIP("10.88.0.2"), net.ParseIP("fd00:88::3"), net.ParseIP("fd00:88::2"), net.ParseIP("2001:db8::1")},
		}}},
		{Name: "spoofcheck_v4_only", Owner: fwtest.BridgeOwner, Rules: fwtypes.Rules{SpoofCheck: &fwtypes.SpoofCheck{
			HostIface: "veth1234", MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0x58, 0x00, 0x02}, IPs: []net.IP{net.ParseIP("10.88.0.2")},
		}}},
		{Name: "isolate_strict_no_uplinks", Owner: fwtest.BridgeOwner, Rules: fwtest.IsolationRules(func(i *fwtypes.Isolation) {
			i.Isolate, i.Uplinks = fwtypes.IsolateStrict, nil
		})},
	}...)
	for _, tc := range cases {
		desired := Chains(tc.Owner, tc.Rules)
		if !nftchain.Buildable(desired) {
			continue // user conditions always go through nft -f
		}
		t.Run(tc.Name, func(t *testing.T) {
			var viaNetlink, viaScript string
			fwtest.InNS(t, func() {
				if err := New().Ensure(ctx, tc.Owner, tc.Rules); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				viaNetlink = fwtest.Listing(t)
				assertSkeletonsIntact(t, desired)
			})
			fwtest.InNS(t, func() {
				if err := nftchain.RunScript(ctx, scriptWithGuard(tc.Owner, tc.Rules)); err != nil {
					t.Fatalf("nft -f: %v", err)
				}
				viaScript = fwtest.Listing(t)
				assertSkeletonsIntact(t, desired)
			})
			if viaNetlink != viaScript {
				t.Errorf("netlink and nft -f write different rules:\n--- netlink\n%s\n--- nft -f\n%s", viaNetlink, viaScript)
			}
		})
	}
}

func assertSkeletonsIntact(t *testing.T, desired []nftchain.Chain) {
	t.Helper()
	conn, err := netfilter.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range desired {
		if ok, err := nftchain.SkeletonIntact(conn, skeleton(c.Table)); err != nil || !ok {
			t.Errorf("skeleton of %s reads as not intact (%v)", c.Table, err)
		}
	}
}

// TestFreshEnsureDeletesNothing: the transaction of a first ADD, skeleton
// included, deletes nothing (so closing its socket costs no RCU wait and
// no helper process); a Remove's does.
func TestFreshEnsureDeletesNothing(t *testing.T) {
	sandbox.Require(t)
	fwtest.InNS(t, func() {
		conn, err := netfilter.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := fwtest.PortRules(t, func(*fwtypes.PortMaps) {})
		desired := Chains(fwtest.PortOwner, r)
		batch := &netfilter.Batch{}
		if err := nftchain.EnsureSkeletons(conn, batch, []nftchain.Skeleton{skeleton(nftchain.Port4), skeleton(nftchain.Port6), nftchain.LocalnetGuard()}); err != nil {
			t.Fatal(err)
		}
		nftchain.EnsureBatch(batch, desired, nil, false)
		if batch.Deletes() {
			t.Error("the first ADD's transaction counts as deleting")
		}
		if err := conn.Apply(batch); err != nil {
			t.Fatalf("apply: %v", err)
		}
		existing, err := nftchain.ReadChains(conn, nftchain.OwnerChains(fwtest.PortOwner))
		if err != nil {
			t.Fatal(err)
		}
		remove := &netfilter.Batch{}
		for _, e := range existing {
			nftchain.RemoveChain(remove, e, false)
		}
		if !remove.Deletes() {
			t.Error("a Remove's transaction does not count as deleting")
		}
	})
}
