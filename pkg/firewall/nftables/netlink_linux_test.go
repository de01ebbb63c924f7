package nftables

import (
	"context"
	"net"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// scriptWithGuard is the nft script of an owner with no rules yet,
// localnet guard included: what Ensure writes, as text.
func scriptWithGuard(o fwapi.Owner, r fwapi.Rules) string {
	s := Script(o, r)
	if r.NeedsLocalnetGuard() {
		s += strings.Join(nftmodel.LocalnetGuard().Lines(), "\n") + "\n"
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
		{Name: "masq_unaligned_prefix", Owner: fwtest.BridgeOwner, Rules: fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.4.2/22")}, {Addr: *fwtest.CIDR(t, "fd00:88::2/60")}}}},
		{Name: "portmap_unaligned_prefix", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, "10.88.4.2/22"), fwtest.CIDR(t, "fd00:88::2/61")
		})},
		{Name: "spoofcheck_adjacent_addresses", Owner: fwtest.BridgeOwner, Rules: fwapi.Rules{SpoofCheck: &fwapi.SpoofCheck{
			HostIface: "veth1234", MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0x58, 0x00, 0x02},
			IPs: []net.IP{net.ParseIP("10.88.0.3"), net.ParseIP("10.88.0.2"), net.ParseIP("fd00:88::3"), net.ParseIP("fd00:88::2"), net.ParseIP("2001:db8::1")},
		}}},
		{Name: "spoofcheck_v4_only", Owner: fwtest.BridgeOwner, Rules: fwapi.Rules{SpoofCheck: &fwapi.SpoofCheck{
			HostIface: "veth1234", MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0x58, 0x00, 0x02}, IPs: []net.IP{net.ParseIP("10.88.0.2")},
		}}},
		{Name: "isolate_strict_no_uplinks", Owner: fwtest.BridgeOwner, Rules: fwtest.IsolationRules(func(i *fwapi.Isolation) {
			i.Isolate, i.Uplinks = fwapi.IsolateStrict, nil
		})},
	}...)
	for _, tc := range cases {
		desired := Chains(tc.Owner, tc.Rules)
		if !nftmodel.Buildable(desired) {
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
				if err := nftmodel.RunScript(ctx, scriptWithGuard(tc.Owner, tc.Rules)); err != nil {
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

func assertSkeletonsIntact(t *testing.T, desired []nftmodel.Chain) {
	t.Helper()
	conn, err := netfilter.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range desired {
		if ok, err := nftmodel.SkeletonIntact(conn, skeleton(c.Table)); err != nil || !ok {
			t.Errorf("skeleton of %s reads as not intact (%v)", c.Table, err)
		}
	}
}
