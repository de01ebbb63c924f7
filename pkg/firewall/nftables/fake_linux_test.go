package nftables

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/nftfake"
)

// The tests in this file run the backend's logic (ensure, remove, Check,
// GC) against nftfake, without root: each asserts what the ruleset holds
// afterwards. Rules with user conditions go through `nft -f`, which the
// fake cannot see: they are left to the privileged tests.

// owner is an owner of the tests' network net1 of the given plugin.
func owner(plugin, id string) fwapi.Owner {
	return fwapi.Owner{Plugin: plugin, Network: "net1", ContainerID: id, IfName: "eth0"}
}

// buildable are the rule cases the backend writes over netlink.
func buildable(t *testing.T) []fwtest.Case {
	var out []fwtest.Case
	for _, tc := range fwtest.RuleCases(t) {
		if nftmodel.Buildable(Chains(tc.Owner, tc.Rules)) {
			out = append(out, tc)
		}
	}
	if len(out) < 15 {
		t.Fatalf("only %d rule cases go over netlink", len(out))
	}
	return out
}

// assertHolds fails unless every desired chain of o holds its rules (by
// their comments, in order) and every verdict map element leading to it.
func assertHolds(t *testing.T, fake *nftfake.Fake, conn *netfilter.Conn, o fwapi.Owner, r fwapi.Rules) {
	t.Helper()
	for _, c := range Chains(o, r) {
		rules, err := conn.Rules(c.Table.Proto(), c.Table.Name, c.Name)
		if err != nil {
			t.Fatalf("chain %s %s: %v; the ruleset:\n%s", c.Table, c.Name, err, fake.Dump())
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.Comment)
		}
		if strings.Join(got, "\n") != strings.Join(c.Comments(), "\n") {
			t.Errorf("chain %s %s holds %q, want %q", c.Table, c.Name, got, c.Comments())
		}
	}
	if err := nftmodel.Check(conn, o, Chains(o, r)); err != nil {
		t.Errorf("Check after ensure: %v; the ruleset:\n%s", err, fake.Dump())
	}
}

// assertGone fails when anything in the ruleset names o: a chain, a jump,
// a map element's verdict or comment.
func assertGone(t *testing.T, fake *nftfake.Fake, o fwapi.Owner) {
	t.Helper()
	if dump := fake.Dump(); strings.Contains(dump, o.Hash()[:16]) {
		t.Errorf("something of %s is left:\n%s", o, dump)
	}
}

// TestFakeEnsureCheckRemove: for every rule case, ensure writes the
// owner's chains and elements (Check finds them), a second ensure changes
// nothing (it re-adds the elements, which the kernel takes as no change), and remove leaves nothing of the owner (Check then reports the
// rules missing).
func TestFakeEnsureCheckRemove(t *testing.T) {
	ctx := context.Background()
	for _, tc := range buildable(t) {
		t.Run(tc.Name, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			if err := ensure(ctx, conn, tc.Owner, tc.Rules); err != nil {
				t.Fatalf("ensure: %v", err)
			}
			assertHolds(t, fake, conn, tc.Owner, tc.Rules)
			guard := strings.Contains(fake.Dump(), "table ip cnisuite_localnet")
			if intact, _ := nftmodel.SkeletonIntact(conn, nftmodel.LocalnetGuard()); guard != tc.Rules.NeedsLocalnetGuard() || guard != intact {
				t.Errorf("localnet guard written %v (intact %v), want %v", guard, intact, tc.Rules.NeedsLocalnetGuard())
			}
			// A rewritten rule, chain or map would show a new handle.
			dump := fake.Dump()
			if err := ensure(ctx, conn, tc.Owner, tc.Rules); err != nil {
				t.Fatalf("second ensure: %v", err)
			}
			if got := fake.Dump(); got != dump {
				t.Errorf("a second ensure changed the ruleset:\n--- before\n%s--- after\n%s", dump, got)
			}
			if err := remove(conn, tc.Owner, func(*netfilter.Batch) error { return nil }); err != nil {
				t.Fatalf("remove: %v", err)
			}
			assertGone(t, fake, tc.Owner)
			if err := nftmodel.Check(conn, tc.Owner, Chains(tc.Owner, tc.Rules)); !errors.Is(err, fwapi.ErrMissing) {
				t.Errorf("Check after remove = %v, want ErrMissing", err)
			}
			if err := remove(conn, tc.Owner, func(*netfilter.Batch) error { return nil }); err != nil {
				t.Errorf("a second remove: %v", err)
			}
		})
	}
}

// TestFakeEnsureRewrites: ensure with other rules rewrites the owner's
// chains and drops the elements it no longer needs.
func TestFakeEnsureRewrites(t *testing.T) {
	ctx := context.Background()
	fake, conn := nftfake.NewConn(t)
	o := fwtest.PortOwner
	old := fwtest.PortRules(t, func(p *fwapi.PortMaps) {})
	if err := ensure(ctx, conn, o, old); err != nil {
		t.Fatal(err)
	}
	changed := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
		p.SNAT = false
		p.Mappings = p.Mappings[:1]
		p.Mappings[0].HostPort = 8081
	})
	if err := ensure(ctx, conn, o, changed); err != nil {
		t.Fatalf("ensure with changed rules: %v", err)
	}
	assertHolds(t, fake, conn, o, changed)
	if err := nftmodel.Check(conn, o, Chains(o, old)); !errors.Is(err, fwapi.ErrMissing) {
		t.Errorf("Check of the old rules = %v, want ErrMissing", err)
	}
	// 5353 was the old udp port: its element must be gone.
	if dump := fake.Dump(); strings.Contains(dump, "1100000014e9") {
		t.Errorf("the element of host port 5353 is left:\n%s", dump)
	}
}

// masqPorts is a masquerade and port mapping of one address of 10.88/16.
func masqPorts(t *testing.T, addr string, port int) fwapi.Rules {
	return fwapi.Rules{
		Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, addr+"/16")}},
		PortMaps: &fwapi.PortMaps{ContainerV4: fwtest.CIDR(t, addr+"/16"), SNAT: true, MarkBit: 13,
			Mappings: []fwapi.PortMapping{{HostPort: port, ContainerPort: 80, Protocol: "tcp"}}},
	}
}

// subnetChains lists the subnet chains in the ruleset (masq_nets and
// hairpin_nets holders).
func subnetChains(t *testing.T, conn *netfilter.Conn) []string {
	t.Helper()
	var out []string
	for _, tab := range []nftmodel.Table{nftmodel.Masq4, nftmodel.Port4} {
		names, err := conn.Chains(tab.Proto(), tab.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, nftmodel.PrefixMasqNet+"-") || strings.HasPrefix(n, nftmodel.PrefixHairpinNet+"-") {
				out = append(out, tab.String()+" "+n)
			}
		}
	}
	return out
}

// TestFakeRemoveKeepsOthers: removing one owner leaves another's chains
// and elements, and the subnet chains they share, which go with the last.
func TestFakeRemoveKeepsOthers(t *testing.T) {
	ctx := context.Background()
	fake, conn := nftfake.NewConn(t)
	a, b := owner(fwapi.PluginBridge, "a"), owner(fwapi.PluginBridge, "b")
	ra, rb := masqPorts(t, "10.88.0.2", 8080), masqPorts(t, "10.88.0.3", 8081)
	for _, x := range []struct {
		o fwapi.Owner
		r fwapi.Rules
	}{{a, ra}, {b, rb}} {
		if err := ensure(ctx, conn, x.o, x.r); err != nil {
			t.Fatalf("ensure %s: %v", x.o, err)
		}
	}
	shared := subnetChains(t, conn)
	if len(shared) != 2 {
		t.Fatalf("subnet chains %q, want one in each table", shared)
	}
	none := func(*netfilter.Batch) error { return nil }
	if err := remove(conn, a, none); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, a)
	assertHolds(t, fake, conn, b, rb)
	if got := subnetChains(t, conn); strings.Join(got, ",") != strings.Join(shared, ",") {
		t.Errorf("subnet chains after the first owner's remove %q, want %q", got, shared)
	}
	if err := remove(conn, b, none); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, b)
	if got := subnetChains(t, conn); len(got) != 0 {
		t.Errorf("subnet chains left after the last owner's remove: %q\n%s", got, fake.Dump())
	}
}

// TestFakeGC: GC removes the network's owners not kept, and keeps the
// kept ones and those of other networks.
func TestFakeGC(t *testing.T) {
	ctx := context.Background()
	fake, conn := nftfake.NewConn(t)
	var owners []fwapi.Owner
	for i, id := range []string{"a", "b", "c", "other"} {
		o := owner(fwapi.PluginBridge, id)
		if id == "other" {
			o.Network = "net2"
		}
		owners = append(owners, o)
		r := masqPorts(t, "10.88.0."+string(rune('2'+i)), 8080+i)
		r.Isolation = &fwapi.Isolation{Bridge: "br-" + o.Network, HostIface: "veth" + id, NoICC: true, Isolate: fwapi.IsolateOn,
			IPs: []net.IP{net.ParseIP("10.88.0." + string(rune('2'+i)))}}
		if err := ensure(ctx, conn, o, r); err != nil {
			t.Fatalf("ensure %s: %v", o, err)
		}
	}
	if err := nftmodel.GC(conn, fwapi.PluginBridge, "net1", []fwapi.Owner{{ContainerID: "b", IfName: "eth0"}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	assertGone(t, fake, owners[0])
	assertGone(t, fake, owners[2])
	dump := fake.Dump()
	for _, o := range []fwapi.Owner{owners[1], owners[3]} {
		for _, prefix := range []string{nftmodel.PrefixMasq, nftmodel.PrefixDNAT, nftmodel.PrefixICCFrom, nftmodel.PrefixIsoHold} {
			if !strings.Contains(dump, nftmodel.ChainName(prefix, o)) {
				t.Errorf("GC deleted chain %s of kept %s", nftmodel.ChainName(prefix, o), o)
			}
		}
	}
	// The network's shared isolation chains stay while b holds them.
	if !strings.Contains(dump, nftmodel.NetChainName(nftmodel.PrefixIsoFrom, owners[1])) {
		t.Errorf("GC deleted the network chain b holds:\n%s", dump)
	}
	if err := nftmodel.GC(conn, fwapi.PluginBridge, "net1", nil); err != nil {
		t.Fatalf("GC keeping nothing: %v", err)
	}
	assertGone(t, fake, owners[1])
	if dump := fake.Dump(); strings.Contains(dump, nftmodel.NetChainName(nftmodel.PrefixIsoFrom, owners[1])) {
		t.Errorf("GC keeping nothing left the network chain:\n%s", dump)
	}
}

// TestFakeCheckReportsMissing: Check names what went missing behind our
// back: a rule, an element of a data map, a chain.
func TestFakeCheckReportsMissing(t *testing.T) {
	ctx := context.Background()
	o := fwtest.PortOwner
	r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
	dnat := nftmodel.ChainName(nftmodel.PrefixDNAT, o)
	for _, tc := range []struct {
		name, want string
		damage     func(t *testing.T, fake *nftfake.Fake, conn *netfilter.Conn) *netfilter.Batch
	}{
		{"rule", "is missing from chain ip cnisuite_portmap " + dnat, func(t *testing.T, _ *nftfake.Fake, conn *netfilter.Conn) *netfilter.Batch {
			rules, err := conn.Rules(nftmodel.Port4.Proto(), nftmodel.Port4.Name, dnat)
			if err != nil || len(rules) == 0 {
				t.Fatalf("rules of %s: %v, %v", dnat, rules, err)
			}
			b := &netfilter.Batch{}
			b.DelRule(nftmodel.Port4, dnat, rules[len(rules)-1].Handle)
			return b
		}},
		{"element", "element udp . 5353 of ip cnisuite_portmap port_dnat is missing", func(t *testing.T, _ *nftfake.Fake, conn *netfilter.Conn) *netfilter.Batch {
			b := &netfilter.Batch{}
			b.DelElem(nftmodel.Port4, "port_dnat", []byte{unix.IPPROTO_UDP, 0, 0, 0, 0x14, 0xe9, 0, 0})
			return b
		}},
		{"chain", "chain ip cnisuite_portmap " + dnat + " is missing", func(t *testing.T, fake *nftfake.Fake, _ *netfilter.Conn) *netfilter.Batch {
			fake.DeleteTable(nftmodel.Port4)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			if err := ensure(ctx, conn, o, r); err != nil {
				t.Fatal(err)
			}
			if b := tc.damage(t, fake, conn); b != nil {
				if err := conn.Apply(b); err != nil {
					t.Fatalf("damaging: %v", err)
				}
			}
			err := nftmodel.Check(conn, o, Chains(o, r))
			if !errors.Is(err, fwapi.ErrMissing) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want ErrMissing saying %q", err, tc.want)
			}
			if err := ensure(ctx, conn, o, r); err != nil {
				t.Fatalf("ensure repairing: %v", err)
			}
			assertHolds(t, fake, conn, o, r)
		})
	}
}

// ports is a v4 port mapping of host ports of the given protocol.
func ports(t *testing.T, addr string, ms ...fwapi.PortMapping) fwapi.Rules {
	return fwapi.Rules{PortMaps: &fwapi.PortMaps{ContainerV4: fwtest.CIDR(t, addr+"/16"), MarkBit: 13, Mappings: ms}}
}

// TestFakeOverlappingPorts: a host port inside another owner's range,
// which the kernel does not refuse, is refused by ensure's read
// (nftmodel.CrossConflict, whose cases nftmodel's TestConflicts holds),
// unless the node's claims decided (WithPortsClaimed); the same port in
// one map the kernel refuses either way. The refused owner writes
// nothing; the holder keeps its rules.
func TestFakeOverlappingPorts(t *testing.T) {
	tcp := func(port, rng int) fwapi.PortMapping {
		return fwapi.PortMapping{HostPort: port, ContainerPort: port, Protocol: "tcp", Range: rng}
	}
	for _, tc := range []struct {
		name            string
		held, new       fwapi.PortMapping
		claimed, refuse bool
	}{
		{"port in a range", tcp(8000, 101), tcp(8050, 0), false, true},
		{"port in a range, claimed", tcp(8000, 101), tcp(8050, 0), true, false},
		{"same port, claimed", tcp(8080, 0), tcp(8080, 0), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			ctx := context.Background()
			holder, next := owner(fwapi.PluginPortmap, "holder"), owner(fwapi.PluginPortmap, "next")
			rh, rn := ports(t, "10.88.0.2", tc.held), ports(t, "10.88.0.3", tc.new)
			if err := ensure(ctx, conn, holder, rh); err != nil {
				t.Fatal(err)
			}
			if tc.claimed {
				ctx = fwapi.WithPortsClaimed(ctx)
			}
			if err := ensure(ctx, conn, next, rn); tc.refuse != errors.Is(err, fwapi.ErrConflict) || (!tc.refuse && err != nil) {
				t.Fatalf("ensure = %v, want refused %v", err, tc.refuse)
			}
			if tc.refuse {
				assertGone(t, fake, next)
			} else {
				assertHolds(t, fake, conn, next, rn)
			}
			assertHolds(t, fake, conn, holder, rh)
		})
	}
}

// TestFakeRemoveAfterVanish: when a table vanishes between remove's read
// and its write (a reset of the node's firewall), remove reads again and
// succeeds, whichever of its calls the reset follows, and leaves nothing
// of the owner.
func TestFakeRemoveAfterVanish(t *testing.T) {
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	for calls := 0; calls < 12; calls++ {
		fake, conn := nftfake.NewConn(t)
		if err := ensure(ctx, conn, o, r); err != nil {
			t.Fatal(err)
		}
		fake.After(calls, func() { fake.DeleteTable(nftmodel.Port4) })
		if err := remove(conn, o, func(*netfilter.Batch) error { return nil }); err != nil {
			t.Errorf("remove with the table vanishing after %d calls: %v", calls, err)
		}
		assertGone(t, fake, o)
	}
}

// TestFakeElementRepaired: an element of the owner's that another hand
// made map elsewhere is found by Check and put back by ensure.
func TestFakeElementRepaired(t *testing.T) {
	ctx := context.Background()
	fake, conn := nftfake.NewConn(t)
	o := fwtest.PortOwner
	r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
	if err := ensure(ctx, conn, o, r); err != nil {
		t.Fatal(err)
	}
	key := []byte{unix.IPPROTO_TCP, 0, 0, 0, 0x1f, 0x90, 0, 0} // tcp . 8080
	got, found, err := conn.GetElem(nftmodel.Port4.Proto(), nftmodel.Port4.Name, "port_dnat", key, nil)
	if err != nil || !found {
		t.Fatalf("element tcp . 8080: %v, %v", found, err)
	}
	b := &netfilter.Batch{}
	b.DelElem(nftmodel.Port4, "port_dnat", key)
	got.Data = append([]byte{}, got.Data...)
	got.Data[3]++ // another container address
	b.AddSetElem(nftmodel.Port4, "port_dnat", got, false)
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := nftmodel.Check(conn, o, Chains(o, r)); !errors.Is(err, fwapi.ErrMissing) || !strings.Contains(err.Error(), "does not map to") {
		t.Errorf("Check of an element mapping elsewhere = %v, want ErrMissing", err)
	}
	if err := ensure(ctx, conn, o, r); err != nil {
		t.Fatalf("ensure repairing: %v", err)
	}
	assertHolds(t, fake, conn, o, r)
}

// TestFakeMapped: the host ports an owner's DNAT chains hold, read back
// from the comments of their rules (what portmap's DEL and GC release),
// each mapping at least once.
func TestFakeMapped(t *testing.T) {
	ctx := context.Background()
	_, conn := nftfake.NewConn(t)
	o := fwtest.PortOwner
	var want []fwapi.PortMapping
	for _, tc := range fwtest.RuleCases(t) {
		if tc.Name == "portmap_ranges" {
			want = tc.Rules.PortMaps.Mappings
			if err := ensure(ctx, conn, o, tc.Rules); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := mapped(conn, o)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(ms []fwapi.PortMapping) []string {
		var out []string
		for _, m := range ms {
			host := ""
			if m.HostIP != nil {
				host = m.HostIP.String()
			}
			rng := max(m.Range, 1)
			out = append(out, fmt.Sprintf("%s %s %d+%d", host, m.Protocol, m.HostPort, rng))
		}
		slices.Sort(out)
		return slices.Compact(out) // a port of both families is in both tables
	}
	if !slices.Equal(norm(got), norm(want)) {
		t.Errorf("mapped = %q, want %q", norm(got), norm(want))
	}
	if got, err := mapped(conn, owner(fwapi.PluginPortmap, "nobody")); err != nil || len(got) != 0 {
		t.Errorf("mapped of an owner without chains = %v, %v", got, err)
	}
}
