package nftmodel

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
)

// The tests in this file run the model against nftfake, without root, on
// a small portmap table of their own (the nftables backend's tests run
// its real chains the same way). What goes through `nft -f` (rules with
// user conditions: ensureScript, RunScript) the fake cannot see: the
// privileged tests of the nftables backend cover it.

func testOwner(id string) fwapi.Owner {
	return fwapi.Owner{Plugin: fwapi.PluginPortmap, Network: "net1", ContainerID: id, IfName: "eth0"}
}

// testSkeleton is a portmap table with the maps the test chains use.
func testSkeleton() Skeleton {
	s := Skeleton{Table: Port4, Chains: []Base{{Name: "prerouting", Hook: HookPrerouting("nat", -100, "dstnat"),
		Rules: []Rule{Build(nil, nftrule.Dport("tcp", 1), nftrule.Accept)}}}}
	for _, m := range []string{"ports", "port_dnat", "range_dnat", "hairpin", "hairpin_nets"} {
		s.Maps = append(s.Maps, Maps[m])
	}
	return s
}

// testChains are an owner's chains for container address ip: a ledger
// chain recording a port_dnat (or, for a range, range_dnat) element per
// key, with a rule dispatched by a verdict map element (udp . vport); a
// hairpin ledger holding the subnet chain of 10.88/16.
func testChains(o fwapi.Owner, ip string, vport string, keys ...string) []Chain {
	pm := Chain{Table: Port4, Name: ChainName(PrefixDNAT, o)}
	for _, k := range keys {
		el := Elem{Set: "port_dnat", Key: "tcp . " + k, Data: ip + " . 80"}
		if strings.Contains(k, "-") {
			el = Elem{Set: "range_dnat", Key: "tcp . " + k, Data: ip}
		}
		pm.Rules = append(pm.Rules, Ledger(el))
	}
	pm.Rules = append(pm.Rules, Build(&Elem{Set: "ports", Key: "udp . " + vport}, nftrule.DNATTo(true, net.ParseIP(ip), 53)))
	_, subnet, _ := net.ParseCIDR("10.88.0.0/16")
	ps := Chain{Table: Port4, Name: SubnetChainName(PrefixHairpinNet, subnet),
		Rules: []Rule{Ledger(Elem{Set: "hairpin_nets", Key: "10.88.0.0/16 . 10.88.0.0/16"})}}
	pmq := Chain{Table: Port4, Name: ChainName(PrefixHairpin, o), Rules: []Rule{
		Ledger(Elem{Set: "hairpin", Key: ip + " . tcp . 80"}), Build(nil, nftrule.Jump(ps.Name))}}
	return []Chain{ps, pm, pmq}
}

func ensureTest(t *testing.T, conn *netfilter.Conn, o fwapi.Owner, chains []Chain) error {
	t.Helper()
	return Ensure(context.Background(), conn, o, chains, []Skeleton{testSkeleton()})
}

// assertHolds fails unless Check finds the chains and their elements.
func assertHolds(t *testing.T, fake *nftfake.Fake, conn *netfilter.Conn, o fwapi.Owner, chains []Chain) {
	t.Helper()
	if err := Check(conn, o, chains); err != nil {
		t.Errorf("Check of %s: %v; the ruleset:\n%s", o, err, fake.Dump())
	}
}

// assertGone fails when anything in the ruleset names o.
func assertGone(t *testing.T, fake *nftfake.Fake, o fwapi.Owner) {
	t.Helper()
	if dump := fake.Dump(); strings.Contains(dump, o.Hash()[:16]) {
		t.Errorf("something of %s is left:\n%s", o, dump)
	}
}

// assertEnsured fails unless the ruleset holds each of want, and a
// second Ensure of the chains leaves it as it is (a rewritten rule, chain
// or map would show a new handle).
func assertEnsured(t *testing.T, fake *nftfake.Fake, conn *netfilter.Conn, o fwapi.Owner, chains []Chain, want []string) {
	t.Helper()
	dump := fake.Dump()
	for _, w := range want {
		if !strings.Contains(dump, w) {
			t.Errorf("the ruleset lacks %q:\n%s", w, dump)
		}
	}
	if err := ensureTest(t, conn, o, chains); err != nil {
		t.Fatal(err)
	}
	if got := fake.Dump(); got != dump {
		t.Errorf("a second Ensure changed the ruleset:\n--- before\n%s--- after\n%s", dump, got)
	}
}

func subnetChain() string {
	_, subnet, _ := net.ParseCIDR("10.88.0.0/16")
	return SubnetChainName(PrefixHairpinNet, subnet)
}

// TestEnsureCheckRemove: Ensure writes the chains, their rules and
// elements (as the dump shows them); a second Ensure changes nothing;
// Remove leaves nothing of the owner nor the subnet chain it alone held;
// Check then reports the rules missing.
func TestEnsureCheckRemove(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	chains := testChains(o, "10.88.0.2", "5353", "8080")
	if err := ensureTest(t, conn, o, chains); err != nil {
		t.Fatal(err)
	}
	assertHolds(t, fake, conn, o, chains)
	assertEnsured(t, fake, conn, o, chains, []string{
		"element 1100000014e90000 : jump " + ChainName(PrefixDNAT, o),                      // ports: udp . 5353
		`element 060000001f900000 : 0a58000200500000 comment "` + ChainName(PrefixDNAT, o), // port_dnat: tcp . 8080 : 10.88.0.2 . 80
		`element 0a5800000a580000-0a58ffff0a58ffff comment "` + subnetChain(),              // hairpin_nets
		"jump " + subnetChain(),
	})
	if err := Remove(conn, o, nil, func(*netfilter.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, o)
	if dump := fake.Dump(); strings.Contains(dump, subnetChain()) {
		t.Errorf("the subnet chain outlived its last owner:\n%s", dump)
	}
	if err := Check(conn, o, chains); !errors.Is(err, fwapi.ErrMissing) {
		t.Errorf("Check after Remove = %v, want ErrMissing", err)
	}
}

// TestEnsureRewrites: Ensure with other keys rewrites the chain and drops
// the elements no longer needed, whoever else holds their chains.
func TestEnsureRewrites(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	if err := ensureTest(t, conn, o, testChains(o, "10.88.0.2", "5353", "8080", "8443")); err != nil {
		t.Fatal(err)
	}
	changed := testChains(o, "10.88.0.2", "5354", "8081")
	if err := ensureTest(t, conn, o, changed); err != nil {
		t.Fatal(err)
	}
	assertHolds(t, fake, conn, o, changed)
	dump := fake.Dump()
	for _, gone := range []string{"1100000014e90000", "060000001f900000", "0600000020fb0000"} {
		if strings.Contains(dump, gone) {
			t.Errorf("element %s of the old keys is left:\n%s", gone, dump)
		}
	}
}

// TestFreshEnsureDeletesNothing: the transaction of a first ADD, skeleton
// included, deletes nothing (so closing its socket costs no RCU wait); a
// Remove's does.
func TestFreshEnsureDeletesNothing(t *testing.T) {
	_, conn := nftfake.NewConn(t)
	o := testOwner("a")
	chains := testChains(o, "10.88.0.2", "5353", "8080")
	batch := &netfilter.Batch{}
	if err := ensureSkeletons(conn, batch, []Skeleton{testSkeleton(), LocalnetGuard()}); err != nil {
		t.Fatal(err)
	}
	ensureBatch(batch, chains, nil, false)
	if batch.Deletes() {
		t.Error("the first ADD's transaction counts as deleting")
	}
	if err := conn.Apply(batch); err != nil {
		t.Fatal(err)
	}
	existing, err := ReadChains(conn, OwnerChains(o))
	if err != nil || len(existing) != 2 {
		t.Fatalf("ReadChains = %v, %v; want the owner's 2 chains", existing, err)
	}
	remove := &netfilter.Batch{}
	for _, e := range existing {
		removeChain(remove, e, false)
	}
	if !remove.Deletes() {
		t.Error("a Remove's transaction does not count as deleting")
	}
}

// TestRemoveKeepsOthers: Remove leaves another owner's chains and
// elements, and the subnet chain they share, which goes with the last.
func TestRemoveKeepsOthers(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	a, b := testOwner("a"), testOwner("b")
	ca, cb := testChains(a, "10.88.0.2", "5353", "8080"), testChains(b, "10.88.0.3", "5354", "8081")
	for _, x := range []struct {
		o fwapi.Owner
		c []Chain
	}{{a, ca}, {b, cb}} {
		if err := ensureTest(t, conn, x.o, x.c); err != nil {
			t.Fatal(err)
		}
	}
	none := func(*netfilter.Batch) error { return nil }
	if err := Remove(conn, a, nil, none); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, a)
	assertHolds(t, fake, conn, b, cb)
	if err := Remove(conn, b, nil, none); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, b)
	if dump := fake.Dump(); strings.Contains(dump, subnetChain()) {
		t.Errorf("the subnet chain outlived its last owner:\n%s", dump)
	}
}

// TestRemoveWithExtra: what another layer and the also function add go
// in Remove's transaction.
func TestRemoveWithExtra(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	if err := ensureTest(t, conn, o, testChains(o, "10.88.0.2", "5353", "8080")); err != nil {
		t.Fatal(err)
	}
	setup := &netfilter.Batch{}
	setup.AddChain(Port4, "extra", nil)
	setup.AddChain(Port4, "also", nil)
	if err := conn.Apply(setup); err != nil {
		t.Fatal(err)
	}
	extra := &netfilter.Batch{}
	extra.DelChain(Port4, "extra")
	err := Remove(conn, o, extra, func(b *netfilter.Batch) error { b.DelChain(Port4, "also"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, o)
	for _, name := range []string{"extra", "also"} {
		if ok, _ := conn.ChainExists(Port4.Proto(), Port4.Name, name); ok {
			t.Errorf("chain %s is left", name)
		}
	}
}

// TestGC: GC removes the network's owners not kept, keeps the kept ones
// and other networks' owners, and the subnet chain while one holds it.
func TestGC(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	owners := []fwapi.Owner{testOwner("a"), testOwner("b"), testOwner("c"), testOwner("d")}
	owners[3].Network = "net2"
	chains := map[fwapi.Owner][]Chain{}
	for i, o := range owners {
		n := string(rune('2' + i))
		chains[o] = testChains(o, "10.88.0."+n, "535"+n, "808"+n)
		if err := ensureTest(t, conn, o, chains[o]); err != nil {
			t.Fatal(err)
		}
	}
	if err := GC(conn, fwapi.PluginPortmap, "net1", []fwapi.Owner{{ContainerID: "b", IfName: "eth0"}}); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, owners[0])
	assertGone(t, fake, owners[2])
	assertHolds(t, fake, conn, owners[1], chains[owners[1]])
	assertHolds(t, fake, conn, owners[3], chains[owners[3]])
	if err := GC(conn, fwapi.PluginPortmap, "net1", nil); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, owners[1])
	assertHolds(t, fake, conn, owners[3], chains[owners[3]])
	if err := GC(conn, fwapi.PluginPortmap, "net2", nil); err != nil {
		t.Fatal(err)
	}
	assertGone(t, fake, owners[3])
	if dump := fake.Dump(); strings.Contains(dump, subnetChain()) {
		t.Errorf("GC left the subnet chain no owner holds:\n%s", dump)
	}
}

// TestCheckReportsMissing: Check names what went missing or changed
// behind our back, and Ensure puts it back.
func TestCheckReportsMissing(t *testing.T) {
	o := testOwner("a")
	chains := testChains(o, "10.88.0.2", "5353", "8080")
	pm := ChainName(PrefixDNAT, o)
	key := []byte{unix.IPPROTO_TCP, 0, 0, 0, 0x1f, 0x90, 0, 0} // tcp . 8080
	for _, tc := range []struct {
		name, want string
		damage     func(t *testing.T, fake *nftfake.Fake, conn *netfilter.Conn, b *netfilter.Batch)
	}{
		{"rule", "is missing from chain ip cnisuite_portmap " + pm, func(t *testing.T, _ *nftfake.Fake, conn *netfilter.Conn, b *netfilter.Batch) {
			rules, err := conn.Rules(Port4.Proto(), Port4.Name, pm)
			if err != nil || len(rules) == 0 {
				t.Fatalf("rules of %s: %v, %v", pm, rules, err)
			}
			b.DelRule(Port4, pm, rules[0].Handle)
		}},
		{"element", "element tcp . 8080 of ip cnisuite_portmap port_dnat is missing", func(_ *testing.T, _ *nftfake.Fake, _ *netfilter.Conn, b *netfilter.Batch) {
			b.DelElem(Port4, "port_dnat", key)
		}},
		{"value", "does not map to 10.88.0.2 . 80", func(_ *testing.T, _ *nftfake.Fake, _ *netfilter.Conn, b *netfilter.Batch) {
			b.DelElem(Port4, "port_dnat", key)
			b.AddSetElem(Port4, "port_dnat", netfilter.Elem{Key: key, Data: []byte{10, 88, 0, 9, 0, 80, 0, 0}, Comment: pm}, false)
		}},
		{"recorder", `is recorded by "someone", not ` + pm, func(_ *testing.T, _ *nftfake.Fake, _ *netfilter.Conn, b *netfilter.Batch) {
			b.DelElem(Port4, "port_dnat", key)
			b.AddSetElem(Port4, "port_dnat", netfilter.Elem{Key: key, Data: []byte{10, 88, 0, 2, 0, 80, 0, 0}, Comment: "someone"}, false)
		}},
		{"chain", "chain ip cnisuite_portmap " + subnetChain() + " is missing", func(_ *testing.T, fake *nftfake.Fake, _ *netfilter.Conn, _ *netfilter.Batch) {
			fake.DeleteTable(Port4)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			if err := ensureTest(t, conn, o, chains); err != nil {
				t.Fatal(err)
			}
			b := &netfilter.Batch{}
			if tc.damage(t, fake, conn, b); !b.Empty() {
				if err := conn.Apply(b); err != nil {
					t.Fatalf("damaging: %v", err)
				}
			}
			err := Check(conn, o, chains)
			if !errors.Is(err, fwapi.ErrMissing) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want ErrMissing saying %q", err, tc.want)
			}
			if tc.name == "recorder" {
				return // another's element: Ensure refuses it (TestConflicts)
			}
			if err := ensureTest(t, conn, o, chains); err != nil {
				t.Fatalf("Ensure repairing: %v", err)
			}
			assertHolds(t, fake, conn, o, chains)
		})
	}
}

// TestConflicts: a key another owner holds is refused with ErrConflict,
// by the kernel (the same key in one map) or by CrossConflict's read
// (ports across single ports and ranges); the refused owner writes
// nothing and the holder keeps all of its own, shared subnet element
// included. A key held by the chain of an owner that is gone (a stray)
// is taken over.
func TestConflicts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		held, want string
		conflict   bool
	}{
		{"same port", "8080", "8080", true},
		{"port in a range", "8000-8100", "8050", true},
		{"range around a port", "8050", "8000-8100", true},
		{"range around a range", "8040-8050", "8000-8100", true},
		{"range over a range's end", "8000-8100", "8100-8110", true},
		{"next port", "8000-8100", "8101", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			holder, next := testOwner("holder"), testOwner("next")
			ch, cn := testChains(holder, "10.88.0.2", "5353", tc.held), testChains(next, "10.88.0.3", "5354", tc.want)
			if err := ensureTest(t, conn, holder, ch); err != nil {
				t.Fatal(err)
			}
			err := CrossConflict(conn, next, cn)
			if err == nil {
				err = ensureTest(t, conn, next, cn)
			}
			if !tc.conflict {
				if err != nil {
					t.Fatalf("a port nobody holds: %v", err)
				}
				assertHolds(t, fake, conn, next, cn)
				return
			}
			if !errors.Is(err, fwapi.ErrConflict) {
				t.Fatalf("a held port: %v, want ErrConflict", err)
			}
			assertGone(t, fake, next)
			assertHolds(t, fake, conn, holder, ch)
		})
	}
}

// TestStraysGiveWay: the elements of an owner whose chains an operator
// deleted, not its elements, are taken over by the next owner of their
// keys; those of a live owner are refused, and the refusal deletes
// nothing of the live owner's (nor of the subnet element it shares).
func TestStraysGiveWay(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	gone, next, live := testOwner("gone"), testOwner("next"), testOwner("live")
	if err := ensureTest(t, conn, gone, testChains(gone, "10.88.0.2", "5353", "8080")); err != nil {
		t.Fatal(err)
	}
	b := &netfilter.Batch{}
	for _, prefix := range []string{PrefixDNAT, PrefixHairpin} {
		b.FlushChain(Port4, ChainName(prefix, gone))
	}
	// The verdict element holds the DNAT chain: deleted with it.
	b.DelElem(Port4, "ports", []byte{unix.IPPROTO_UDP, 0, 0, 0, 0x14, 0xe9, 0, 0})
	for _, prefix := range []string{PrefixDNAT, PrefixHairpin} {
		b.DelChain(Port4, ChainName(prefix, gone))
	}
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	cn := testChains(next, "10.88.0.3", "5353", "8080")
	if err := ensureTest(t, conn, next, cn); err != nil {
		t.Fatalf("Ensure over stray elements: %v", err)
	}
	// Check proves next's chain records the keys; gone's elements that no
	// key of next's needs (its hairpin element) stay: nothing reads them.
	assertHolds(t, fake, conn, next, cn)
	if err := ensureTest(t, conn, live, testChains(live, "10.88.0.4", "5355", "8080")); !errors.Is(err, fwapi.ErrConflict) {
		t.Errorf("Ensure of a live owner's key = %v, want ErrConflict", err)
	}
	assertHolds(t, fake, conn, next, cn)
}

// TestRemoveAfterVanish: when the table vanishes between Remove's read
// and its write (a reset of the node's firewall), RetryVanished reads
// again and Remove succeeds, whichever call the reset follows.
func TestRemoveAfterVanish(t *testing.T) {
	o := testOwner("a")
	for calls := 0; calls < 10; calls++ {
		fake, conn := nftfake.NewConn(t)
		if err := ensureTest(t, conn, o, testChains(o, "10.88.0.2", "5353", "8080")); err != nil {
			t.Fatal(err)
		}
		fake.After(calls, func() { fake.DeleteTable(Port4) })
		err := RetryVanished(func() error { return Remove(conn, o, nil, func(*netfilter.Batch) error { return nil }) })
		if err != nil {
			t.Errorf("Remove with the table vanishing after %d calls: %v", calls, err)
		}
		assertGone(t, fake, o)
	}
}

// failCommits makes every transaction fail with errno until stop.
func failCommits(fake *nftfake.Fake, errno unix.Errno) (stop func()) {
	failing := true
	var arm func()
	arm = func() {
		if failing {
			fake.FailNext(errno)
			fake.After(1, arm)
		}
	}
	arm()
	return func() { failing = false; fake.FailNext(0) }
}

// TestFailedCommit: Ensure tries a failed transaction once more; when
// that fails too, it reports ErrIO and the ruleset is as it was. Remove
// tries its safe form after a failed first transaction, and GC reports
// its failure.
func TestFailedCommit(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	chains := testChains(o, "10.88.0.2", "5353", "8080")
	fake.FailNext(unix.ENOMEM)
	if err := ensureTest(t, conn, o, chains); err != nil {
		t.Fatalf("Ensure with one failing commit: %v", err)
	}
	assertHolds(t, fake, conn, o, chains)
	before := fake.Dump()
	stop := failCommits(fake, unix.ENOMEM)
	err := ensureTest(t, conn, o, testChains(o, "10.88.0.2", "5353", "8081"))
	stop()
	if !errors.Is(err, unix.ENOMEM) || !strings.Contains(err.Error(), o.String()) {
		t.Errorf("Ensure with failing commits = %v, want ENOMEM naming the owner", err)
	}
	if got := fake.Dump(); got != before {
		t.Errorf("a failed Ensure changed the ruleset:\n--- before\n%s--- after\n%s", before, got)
	}
	stop = failCommits(fake, unix.ENOMEM)
	err = GC(conn, fwapi.PluginPortmap, "net1", nil)
	stop()
	if !errors.Is(err, unix.ENOMEM) || fake.Dump() != before {
		t.Errorf("GC with failing commits = %v, want ENOMEM and the ruleset unchanged", err)
	}
	fake.FailNext(unix.ENOMEM)
	if err := Remove(conn, o, nil, func(*netfilter.Batch) error { return nil }); err != nil {
		t.Errorf("Remove after its first commit failed: %v", err)
	}
	assertGone(t, fake, o)
}

// TestReadsFail: a caller that may not read the ruleset (EPERM) gets the
// error from every call, and nothing is written.
func TestReadsFail(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	chains := testChains(o, "10.88.0.2", "5353", "8080")
	fake.FailReads(unix.EPERM)
	for name, err := range map[string]error{
		"Ensure":        ensureTest(t, conn, o, chains),
		"Check":         Check(conn, o, chains),
		"Remove":        Remove(conn, o, nil, func(*netfilter.Batch) error { return nil }),
		"GC":            GC(conn, fwapi.PluginPortmap, "net1", nil),
		"CrossConflict": CrossConflict(conn, o, testChains(o, "10.88.0.2", "5353", "8000-8100")),
		"EnsureGuard":   EnsureGuard(conn),
	} {
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("%s with reads refused = %v, want EPERM", name, err)
		}
	}
	if fake.Commits() != 0 {
		t.Errorf("%d transactions committed with reads refused", fake.Commits())
	}
}

// TestEnsureGuard: the localnet guard is written once, and left alone
// while intact.
func TestEnsureGuard(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	if err := EnsureGuard(conn); err != nil {
		t.Fatal(err)
	}
	dump := fake.Dump()
	if !strings.Contains(dump, "table ip cnisuite_localnet") || !strings.Contains(dump, "type filter hook prerouting priority -150") {
		t.Errorf("the localnet guard is not in place:\n%s", dump)
	}
	if intact, err := SkeletonIntact(conn, LocalnetGuard()); err != nil || !intact {
		t.Errorf("SkeletonIntact of the guard = %v, %v", intact, err)
	}
	if err := EnsureGuard(conn); err != nil {
		t.Fatal(err)
	}
	if got := fake.Dump(); got != dump {
		t.Errorf("a second EnsureGuard rewrote the guard:\n%s", got)
	}
}

// TestOrphanElemsRemoved: when the owner's chains were flushed behind
// our back, their rules no longer name their elements: Remove and GC find
// the elements that jump to the chains or name them, and delete them with
// the chains.
func TestOrphanElemsRemoved(t *testing.T) {
	for _, via := range []string{"Remove", "GC"} {
		t.Run(via, func(t *testing.T) {
			fake, conn := nftfake.NewConn(t)
			o, other := testOwner("a"), testOwner("b")
			co := testChains(other, "10.88.0.3", "5354", "8081")
			for _, x := range []struct {
				o fwapi.Owner
				c []Chain
			}{{o, testChains(o, "10.88.0.2", "5353", "8080")}, {other, co}} {
				if err := ensureTest(t, conn, x.o, x.c); err != nil {
					t.Fatal(err)
				}
			}
			b := &netfilter.Batch{}
			for _, prefix := range []string{PrefixDNAT, PrefixHairpin} {
				b.FlushChain(Port4, ChainName(prefix, o))
			}
			if err := conn.Apply(b); err != nil {
				t.Fatal(err)
			}
			var err error
			if via == "Remove" {
				err = Remove(conn, o, nil, func(*netfilter.Batch) error { return nil })
			} else {
				err = GC(conn, fwapi.PluginPortmap, "net1", []fwapi.Owner{{ContainerID: "b", IfName: "eth0"}})
			}
			if err != nil {
				t.Fatal(err)
			}
			assertGone(t, fake, o)
			assertHolds(t, fake, conn, other, co)
		})
	}
}

// TestAnonymousSets: a rule that looks a source up in an anonymous set
// ("ip saddr != { … }") gets the set in its own transaction, bound to it;
// a second Ensure leaves both; Remove deletes the set with the rule.
func TestAnonymousSets(t *testing.T) {
	fake, conn := nftfake.NewConn(t)
	o := testOwner("a")
	set := nftrule.Set{Type: "ipv4_addr", Items: []string{"10.88.0.2", "192.0.2.0/24"}}
	chains := []Chain{{Table: Port4, Name: ChainName(PrefixDNAT, o), Rules: []Rule{
		Build(&Elem{Set: "ports", Key: "tcp . 8080"}, nftrule.NotIn("ip saddr", set, nftrule.LoadNH(12, 4, nftrule.Reg1)), nftrule.Drop)}}}
	if err := ensureTest(t, conn, o, chains); err != nil {
		t.Fatal(err)
	}
	assertHolds(t, fake, conn, o, chains)
	assertEnsured(t, fake, conn, o, chains, []string{"flags anonymous,constant,interval;",
		"element 0a580002\n\t\telement 0a580003 interval-end\n\t\telement c0000200\n\t\telement c0000300 interval-end", "@__set0 comment"})
	if err := Remove(conn, o, nil, func(*netfilter.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if dump := fake.Dump(); strings.Contains(dump, "anonymous") {
		t.Errorf("the anonymous set outlived its rule:\n%s", dump)
	}
}

// flushChains empties the named chains of table, or all of them (none
// named), as `nft flush chain` or `nft flush table` does behind our back.
func flushChains(t *testing.T, conn *netfilter.Conn, table Table, names ...string) {
	t.Helper()
	if len(names) == 0 {
		all, err := conn.Chains(table.Proto(), table.Name)
		if err != nil {
			t.Fatal(err)
		}
		names = all
	}
	b := &netfilter.Batch{}
	for _, n := range names {
		b.FlushChain(table, n)
	}
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveAfterFlush: when the owners' chains were flushed behind our
// back, no rule names the subnet chain any more; Remove and GC still take
// it and its element away once no owner holds it, and keep it while one
// does.
func TestRemoveAfterFlush(t *testing.T) {
	for _, viaGC := range []bool{false, true} {
		fake, conn := nftfake.NewConn(t)
		a, b := testOwner("a"), testOwner("b")
		if err := ensureTest(t, conn, a, testChains(a, "10.88.0.2", "5353", "8080")); err != nil {
			t.Fatal(err)
		}
		if err := ensureTest(t, conn, b, testChains(b, "10.88.0.3", "5354", "8081")); err != nil {
			t.Fatal(err)
		}
		// a's hairpin chain flushed: b still jumps to the subnet chain.
		flushChains(t, conn, Port4, ChainName(PrefixHairpin, a))
		if err := Remove(conn, a, nil, func(*netfilter.Batch) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fake.Dump(), subnetChain()) {
			t.Fatalf("the subnet chain b holds went with a:\n%s", fake.Dump())
		}
		// Then the whole table flushed, and b goes too.
		flushChains(t, conn, Port4)
		var err error
		if viaGC {
			err = GC(conn, b.Plugin, b.Network, nil)
		} else {
			err = Remove(conn, b, nil, func(*netfilter.Batch) error { return nil })
		}
		if err != nil {
			t.Fatal(err)
		}
		if dump := fake.Dump(); strings.Contains(dump, subnetChain()) {
			t.Errorf("gc %v: the subnet chain or its element outlived its last owner:\n%s", viaGC, dump)
		}
		assertGone(t, fake, b)
	}
}
