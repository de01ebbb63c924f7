package iptables

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/nftfake"
	"cnisuite/test/userns"
)

// The iptables-nft writer over nftfake, without root. The fake keeps the
// expressions as sent and checks only what they refer to (chains, sets):
// not the xt match and target payloads (comment, addrtype, sctp,
// MASQUERADE, MARK, DNAT, SNAT info), which the kernel's x_tables checks
// and iptables-save decodes. That they are what iptables-nft 1.8.9 writes
// is the job of TestNetlinkWriteMatchesRestore and its siblings, against
// the kernel (test/userns). Here the writer's logic meets the kernel's
// answers: what it reads, which transaction it sends, the handles it
// records, and how it treats a failing commit or a table that vanishes.

// onFake returns a backend with the iptables-nft writer over netlink alone
// (a fallback to iptables-restore would write the test's kernel, not the
// fake) talking to a fresh fake, and the fake. Its jump files go under
// /run, the tests' own tmpfs (test/userns), and are removed afterwards.
func onFake(t *testing.T) (*Backend, *nftfake.Fake) {
	t.Helper()
	userns.RequireStateDirs(t)
	fake := nftfake.New()
	b := withWriter(&nft{})
	b.dial = func() (*netfilter.Conn, error) { return fake.Conn(), nil }
	t.Cleanup(func() {
		if err := os.RemoveAll(filepath.Join(jumpsRoot, jumpsDir)); err != nil {
			t.Error(err)
		}
	})
	return b, fake
}

// primeFake makes table nat of both families with the node's external mark
// chain KUBE-MARK-MASQ (a case's externalSetMarkChain), as kube-proxy
// leaves them; the built-in chains are left to the writer.
func primeFake(t *testing.T, fake *nftfake.Fake) {
	t.Helper()
	batch := &netfilter.Batch{}
	for _, f := range families {
		batch.AddTable(f.table())
		batch.AddChain(f.table(), "KUBE-MARK-MASQ", nil)
	}
	conn := fake.Conn()
	defer conn.Close()
	if err := conn.Apply(batch); err != nil {
		t.Fatal(err)
	}
}

// seenJump is a rule of a built-in chain jumping into an owner chain, as
// our own decoding reads it back.
type seenJump struct {
	parent, chain, comment string
	handle                 uint64
	source                 string // what "-s" compares, hex
}

// seen is what a user would find of an owner in one family of the fake:
// its chains with their rules' comments, the jumps into them, the record
// of their handles.
type seen struct {
	chains   map[string][]string
	jumps    []seenJump
	recorded []jump
	hasFile  bool
}

func look(t *testing.T, fake *nftfake.Fake, o fwapi.Owner, f family) seen {
	t.Helper()
	conn := fake.Conn()
	defer conn.Close()
	s := seen{chains: map[string][]string{}}
	own := natchain.OwnerChains(o)
	for _, name := range own {
		ok, err := conn.ChainExists(f.proto(), "nat", name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		rules, err := conn.Rules(f.proto(), "nat", name)
		if err != nil {
			t.Fatal(err)
		}
		s.chains[name] = []string{}
		for _, r := range rules {
			s.chains[name] = append(s.chains[name], r.Comment)
		}
	}
	for _, p := range natchain.Parents {
		if ok, err := conn.ChainExists(f.proto(), "nat", p); err != nil || !ok {
			continue
		}
		rules, err := conn.Rules(f.proto(), "nat", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if slices.Contains(own, r.Jump) {
				src := fmt.Sprintf("%x", natchain.DumpedSource(r.Exprs, f.v4))
				s.jumps = append(s.jumps, seenJump{parent: p, chain: r.Jump, comment: r.Comment, handle: r.Handle, source: src})
			}
		}
	}
	s.recorded, s.hasFile = loadJumps(f, o)
	return s
}

// assertHolds checks that the fake holds exactly the chains and jumps r
// needs for o in each family, and a record of the jumps' handles.
func assertHolds(t *testing.T, fake *nftfake.Fake, o fwapi.Owner, r fwapi.Rules) {
	t.Helper()
	assertHoldsIn(t, fake, o, r, families, true)
}

// assertHoldsIn is assertHolds for some families, the record checked
// only when record is set.
func assertHoldsIn(t *testing.T, fake *nftfake.Fake, o fwapi.Owner, r fwapi.Rules, fams []family, record bool) {
	t.Helper()
	for _, f := range fams {
		s := look(t, fake, o, f)
		want := natchain.Desired(o, r, f.v4)
		if len(s.chains) != len(want) {
			t.Errorf("%s: owner chains %v, want %d; the ruleset:\n%s", f, s.chains, len(want), fake.Dump())
		}
		var wantJumps []seenJump
		for _, c := range want {
			var comments []string
			for _, rule := range c.Rules {
				comments = append(comments, rule.Comment())
			}
			if got, ok := s.chains[c.Name]; !ok || !slices.Equal(got, comments) {
				t.Errorf("%s: chain %s holds rules %q, want %q", f, c.Name, got, comments)
			}
			for _, j := range natchain.ChainJumps(o, c) {
				x, err := natchain.Encode(j.Rule, f.v4)
				if err != nil {
					t.Fatal(err)
				}
				wantJumps = append(wantJumps, seenJump{parent: j.Parent, chain: c.Name, comment: natchain.EntryTag(o), source: fmt.Sprintf("%x", x.Source)})
			}
		}
		var got, handles []string
		for _, j := range s.jumps {
			got = append(got, fmt.Sprintf("%s→%s %q src=%s", j.parent, j.chain, j.comment, j.source))
			handles = append(handles, fmt.Sprintf("%s %d", j.parent, j.handle))
		}
		var wantText []string
		for _, j := range wantJumps {
			wantText = append(wantText, fmt.Sprintf("%s→%s %q src=%s", j.parent, j.chain, j.comment, j.source))
		}
		slices.Sort(got)
		slices.Sort(wantText)
		if !slices.Equal(got, wantText) {
			t.Errorf("%s: jumps\n%s\nwant\n%s", f, strings.Join(got, "\n"), strings.Join(wantText, "\n"))
		}
		var rec []string
		for _, j := range s.recorded {
			rec = append(rec, fmt.Sprintf("%s %d", j.parent, j.handle))
		}
		slices.Sort(rec)
		slices.Sort(handles)
		if record && !slices.Equal(rec, handles) {
			t.Errorf("%s: the jump file records %q, want the jumps' handles %q", f, rec, handles)
		}
	}
}

// assertGone checks that nothing of o is left: no chain, no jump, no file.
func assertGone(t *testing.T, fake *nftfake.Fake, o fwapi.Owner) {
	t.Helper()
	for _, f := range families {
		if s := look(t, fake, o, f); len(s.chains)+len(s.jumps) > 0 || s.hasFile {
			t.Errorf("%s: left of %s: chains %v, jumps %v, jump file %v; the ruleset:\n%s", f, o, s.chains, s.jumps, s.hasFile, fake.Dump())
		}
		j, err := jumpsFileFor(f, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(jumpsRoot, jumpsDir, j.netns, j.tmp())); err == nil {
			t.Errorf("%s: the temporary jump file of %s is left", f, o)
		}
	}
}

// wantMapped is what Mapped reads back of r's mappings.
func wantMapped(r fwapi.Rules) []string {
	var out []string
	for _, v4 := range []bool{true, false} {
		pm := r.PortMaps
		if pm == nil || v4 && pm.ContainerV4 == nil || !v4 && pm.ContainerV6 == nil {
			continue
		}
		for _, m := range fwapi.ForFamily(pm.Mappings, v4) {
			w := fwapi.PortMapping{HostPort: m.HostPort, Protocol: m.Protocol, HostIP: m.SpecificHost()}
			if m.IsRange() {
				w.Range = m.Range
			}
			out = append(out, fmt.Sprint(w))
		}
	}
	return out
}

// TestFakeLifecycle: for every rule set the netlink writer writes, Ensure
// leaves the chains with their rules, the tagged jumps and the record of
// their handles; Check passes and Mapped reads the mappings back; a second
// Ensure sends nothing; Remove leaves nothing of the owner and keeps the
// node's chains.
func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	for _, c := range writeCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			b, fake := onFake(t)
			primeFake(t, fake)
			if err := b.Ensure(ctx, c.Owner, c.Rules); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			assertHolds(t, fake, c.Owner, c.Rules)
			if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
				t.Errorf("Check: %v", err)
			}
			ms, err := b.Mapped(ctx, c.Owner)
			var got []string
			for _, m := range ms {
				got = append(got, fmt.Sprint(m))
			}
			if want := wantMapped(c.Rules); err != nil || !slices.Equal(got, want) {
				t.Errorf("Mapped = %q, %v; want %q", got, err, want)
			}
			commits, dump := fake.Commits(), fake.Dump()
			if err := b.Ensure(ctx, c.Owner, c.Rules); err != nil {
				t.Fatalf("Ensure #2: %v", err)
			}
			if fake.Commits() != commits || fake.Dump() != dump {
				t.Errorf("a second Ensure of the same rules wrote (%d transactions):\n%s\nbefore:\n%s", fake.Commits()-commits, fake.Dump(), dump)
			}
			if err := b.Remove(ctx, c.Owner); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			assertGone(t, fake, c.Owner)
			conn := fake.Conn()
			defer conn.Close()
			for _, f := range families {
				if ok, err := conn.ChainExists(f.proto(), "nat", "KUBE-MARK-MASQ"); !ok || err != nil {
					t.Errorf("%s: Remove deleted the node's chain KUBE-MARK-MASQ (%v)", f, err)
				}
			}
		})
	}
}

// owners are three attachments of network net1 (a masquerade and two
// port mappings) and one of another network.
func owners(t *testing.T) []fwtest.Case {
	ctr2, net2 := fwtest.PortOwner, fwtest.PortOwner
	ctr2.ContainerID = "ctr2"
	net2.Network = "net2"
	masq := fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}, {Addr: *fwtest.CIDR(t, "fd00:88::2/64")}}}
	other := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
		p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, "10.88.0.3/16"), fwtest.CIDR(t, "fd00:88::3/64")
		p.Mappings = []fwapi.PortMapping{{HostPort: 9090, ContainerPort: 90, Protocol: "tcp"}}
	})
	return []fwtest.Case{
		{Name: "bridge", Owner: fwtest.BridgeOwner, Rules: masq},
		{Name: "portmap", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(*fwapi.PortMaps) {})},
		{Name: "portmap_ctr2", Owner: ctr2, Rules: other},
		{Name: "portmap_net2", Owner: net2, Rules: other},
	}
}

func ensureAll(t *testing.T, b *Backend, cases []fwtest.Case) {
	t.Helper()
	for _, c := range cases {
		if err := b.Ensure(context.Background(), c.Owner, c.Rules); err != nil {
			t.Fatalf("Ensure(%s): %v", c.Name, err)
		}
	}
}

// TestFakeRemoveKeepsOthers: removing one attachment leaves every other
// one's chains, jumps and record whole, in the same built-in chains.
func TestFakeRemoveKeepsOthers(t *testing.T) {
	ctx := context.Background()
	b, fake := onFake(t)
	all := owners(t)
	ensureAll(t, b, all)
	if err := b.Remove(ctx, all[1].Owner); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	assertGone(t, fake, all[1].Owner)
	for _, c := range slices.Delete(all, 1, 2) {
		assertHolds(t, fake, c.Owner, c.Rules)
		if err := b.Check(ctx, c.Owner, c.Rules); err != nil {
			t.Errorf("Check(%s) after another's Remove: %v", c.Name, err)
		}
	}
	if err := b.Remove(ctx, all[1].Owner); err != nil {
		t.Errorf("Remove of what is gone: %v", err)
	}
}

// TestFakeRewrite: Ensure over an owner's chains with other rules leaves
// exactly the new ones (no stale rule, jump, chain or recorded handle),
// as iptables-restore of the new rules would.
func TestFakeRewrite(t *testing.T) {
	ctx := context.Background()
	for _, tc := range rewriteCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			b, fake := onFake(t)
			primeFake(t, fake)
			if err := b.Ensure(ctx, tc.o, tc.old); err != nil {
				t.Fatalf("Ensure(old): %v", err)
			}
			if err := b.Ensure(ctx, tc.o, tc.new); err != nil {
				t.Fatalf("Ensure(new): %v", err)
			}
			assertHolds(t, fake, tc.o, tc.new)
			if err := b.Check(ctx, tc.o, tc.new); err != nil {
				t.Errorf("Check(new): %v", err)
			}
		})
	}
}

// deleteRules deletes, in one transaction, the rules of chain (of table
// nat of f) that pick selects, as another program would.
func deleteRules(t *testing.T, fake *nftfake.Fake, f family, chain string, pick func(netfilter.Rule) bool) {
	t.Helper()
	conn := fake.Conn()
	defer conn.Close()
	rules, err := conn.Rules(f.proto(), "nat", chain)
	if err != nil {
		t.Fatal(err)
	}
	batch := &netfilter.Batch{}
	for _, r := range rules {
		if pick(r) {
			batch.DelRule(f.table(), chain, r.Handle)
		}
	}
	if batch.Empty() {
		t.Fatalf("no rule of %s %s to delete", f, chain)
	}
	if err := conn.Apply(batch); err != nil {
		t.Fatal(err)
	}
}

// TestFakeCheckReportsWhatIsMissing: Check names what another program
// deleted: a rule of an owner chain, a jump into one, a whole chain.
func TestFakeCheckReportsWhatIsMissing(t *testing.T) {
	o, v6 := fwtest.PortOwner, family{v4: false}
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	dn, hm := natchain.ChainName(natchain.PrefixDNAT, o), natchain.ChainName(natchain.PrefixHairpin, o)
	tests := []struct {
		name, want string
		break_     func(t *testing.T, fake *nftfake.Fake)
	}{
		{"rule", "is missing from chain " + dn, func(t *testing.T, fake *nftfake.Fake) {
			deleteRules(t, fake, v6, dn, func(r netfilter.Rule) bool { return r.Handle == firstHandle(t, fake, v6, dn) })
		}},
		{"jump", "1 of the 2 jumps into chain " + dn + " are missing", func(t *testing.T, fake *nftfake.Fake) {
			deleteRules(t, fake, v6, "OUTPUT", func(r netfilter.Rule) bool { return r.Jump == dn })
		}},
		{"chain", "chain " + hm + " is missing", func(t *testing.T, fake *nftfake.Fake) {
			deleteRules(t, fake, v6, "POSTROUTING", func(r netfilter.Rule) bool { return r.Jump == hm })
			batch := &netfilter.Batch{}
			batch.FlushChain(v6.table(), hm)
			batch.DelChain(v6.table(), hm)
			conn := fake.Conn()
			defer conn.Close()
			if err := conn.Apply(batch); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, fake := onFake(t)
			if err := b.Ensure(context.Background(), o, r); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			tc.break_(t, fake)
			err := b.Check(context.Background(), o, r)
			if !errors.Is(err, fwapi.ErrMissing) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want fwapi.ErrMissing saying %q", err, tc.want)
			}
			if err := b.Ensure(context.Background(), o, r); err != nil {
				t.Fatalf("Ensure to repair: %v", err)
			}
			assertHolds(t, fake, o, r)
			if err := b.Check(context.Background(), o, r); err != nil {
				t.Errorf("Check after the repairing Ensure: %v", err)
			}
		})
	}
}

func firstHandle(t *testing.T, fake *nftfake.Fake, f family, chain string) uint64 {
	t.Helper()
	conn := fake.Conn()
	defer conn.Close()
	rules, err := conn.Rules(f.proto(), "nat", chain)
	if err != nil || len(rules) == 0 {
		t.Fatalf("rules of %s: %v, %v", chain, rules, err)
	}
	return rules[0].Handle
}

// TestFakeGCKeepsListed: GC of network net1 keeping one attachment
// deletes the chains, jumps and records of net1's others, and leaves the
// kept one and another network's whole.
func TestFakeGCKeepsListed(t *testing.T) {
	ctx := context.Background()
	b, fake := onFake(t)
	all := owners(t)
	ensureAll(t, b, all)
	kept := all[2]
	if err := b.GC(ctx, fwapi.PluginPortmap, "net1", []fwapi.Owner{kept.Owner}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	assertGone(t, fake, all[1].Owner)
	for _, c := range []fwtest.Case{all[0], kept, all[3]} { // bridge's chains are another plugin's
		assertHolds(t, fake, c.Owner, c.Rules)
	}
	commits := fake.Commits()
	if err := b.GC(ctx, fwapi.PluginPortmap, "net1", []fwapi.Owner{kept.Owner}); err != nil || fake.Commits() != commits {
		t.Errorf("GC again = %v after %d transactions, want nil and none", err, fake.Commits()-commits)
	}
}

// TestFakeFailingCommit: a transaction the kernel refuses leaves the
// ruleset and the records as they were; Ensure and GC say so (with no
// iptables-restore to fall back on), Remove tries again from a dump of the
// built-in chains and succeeds.
func TestFakeFailingCommit(t *testing.T) {
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	t.Run("ensure", func(t *testing.T) {
		b, fake := onFake(t)
		fake.FailNext(unix.ENOMEM)
		if err := b.Ensure(ctx, o, r); !errors.Is(err, errNoFallback) || !errors.Is(err, unix.ENOMEM) {
			t.Errorf("Ensure with a failing commit = %v, want the commit's error and no fallback", err)
		}
		assertGone(t, fake, o)
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatalf("Ensure again: %v", err)
		}
		assertHolds(t, fake, o, r)
	})
	t.Run("rewrite", func(t *testing.T) {
		b, fake := onFake(t)
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatal(err)
		}
		fake.FailNext(unix.ENOMEM)
		moved := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.Mappings = p.Mappings[1:] })
		if err := b.Ensure(ctx, o, moved); err == nil {
			t.Error("Ensure of new rules with a failing commit succeeded")
		}
		assertHolds(t, fake, o, r)
	})
	t.Run("remove", func(t *testing.T) {
		b, fake := onFake(t)
		ensureAll(t, b, owners(t))
		fake.FailNext(unix.EBUSY)
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove with one failing commit: %v", err)
		}
		assertGone(t, fake, o)
	})
	t.Run("gc", func(t *testing.T) {
		b, fake := onFake(t)
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatal(err)
		}
		fake.FailNext(unix.ENOMEM) // IPv4's: each family is a transaction
		if err := b.GC(ctx, o.Plugin, o.Network, nil); !errors.Is(err, errNoFallback) {
			t.Errorf("GC with a failing commit = %v, want no fallback", err)
		}
		assertHoldsIn(t, fake, o, r, families[:1], true)
		if err := b.GC(ctx, o.Plugin, o.Network, nil); err != nil {
			t.Fatalf("GC again: %v", err)
		}
		assertGone(t, fake, o)
	})
}

// beforeCommit is a fake whose ruleset fn changes just before the next
// transaction: another program resetting the firewall between the reads
// of the code under test and its write.
type beforeCommit struct {
	*nftfake.Fake
	fn func()
}

func (p *beforeCommit) Exchange(datagram []byte) ([][]byte, error) {
	if p.fn != nil && len(datagram) >= 6 && binary.NativeEndian.Uint16(datagram[4:]) == unix.NFNL_MSG_BATCH_BEGIN {
		fn := p.fn
		p.fn = nil
		fn()
	}
	return p.Fake.Exchange(datagram)
}

// TestFakeTableVanishes: table nat deleted between what a call read and
// its commit. Remove reads again and removes what is left (the other
// family's chains and records); Ensure, with no iptables-restore to fall
// back on, fails, and the next Ensure writes it all again with a true
// record.
func TestFakeTableVanishes(t *testing.T) {
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	setup := func(t *testing.T) (*Backend, *nftfake.Fake, *beforeCommit) {
		b, fake := onFake(t)
		p := &beforeCommit{Fake: fake}
		b.dial = func() (*netfilter.Conn, error) { return netfilter.DialPeer(p), nil }
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatal(err)
		}
		return b, fake, p
	}
	vanish := func(fake *nftfake.Fake, tab netfilter.Table) func() {
		return func() {
			if !fake.DeleteTable(tab) {
				panic("no table " + tab.Name)
			}
		}
	}
	t.Run("remove", func(t *testing.T) {
		b, fake, p := setup(t)
		p.fn = vanish(fake, family{v4: true}.table())
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		assertGone(t, fake, o)
	})
	t.Run("remove_both", func(t *testing.T) {
		b, fake, p := setup(t)
		p.fn = func() {
			for _, f := range families {
				vanish(fake, f.table())()
			}
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		assertGone(t, fake, o)
	})
	t.Run("ensure", func(t *testing.T) {
		b, fake, p := setup(t)
		moved := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.Mappings = p.Mappings[1:] })
		p.fn = vanish(fake, family{v4: true}.table())
		if err := b.Ensure(ctx, o, moved); !errors.Is(err, unix.ENOENT) {
			t.Errorf("Ensure whose table vanished = %v, want ENOENT", err)
		}
		if err := b.Ensure(ctx, o, moved); err != nil {
			t.Fatalf("the next Ensure: %v", err)
		}
		assertHolds(t, fake, o, moved)
	})
}

// TestFakeReadsFail: a netfilter socket that may not read (no
// CAP_NET_ADMIN) is an I/O error for every call, not "missing" and not
// success.
func TestFakeReadsFail(t *testing.T) {
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	b, fake := onFake(t)
	if err := b.Ensure(ctx, o, r); err != nil {
		t.Fatal(err)
	}
	fake.FailReads(unix.EPERM)
	for name, call := range everyCall(b, o, r) {
		if err := call(); !errors.Is(err, unix.EPERM) || errors.Is(err, fwapi.ErrMissing) {
			t.Errorf("%s with reads refused = %v, want EPERM", name, err)
		}
	}
	fake.FailReads(0)
	// The failed Remove forgot the record (the next one dumps instead).
	assertHoldsIn(t, fake, o, r, families, false)
}

// TestFakeRecordNotTrusted: Remove follows the record of the jumps only
// when every handle in it is a jump of the owner: a record missing a jump
// (the kernel then refuses to delete the chain still in use), naming
// another's rule, or unreadable, makes it dump the built-in chains, and
// it removes everything of the owner and nothing of another's.
func TestFakeRecordNotTrusted(t *testing.T) {
	ctx := context.Background()
	all := owners(t)
	o, other := all[1], all[2]
	v4 := family{v4: true}
	for name, lie := range map[string]func(t *testing.T, real, others []jump){
		"jump_missing": func(t *testing.T, real, _ []jump) { saveJumps(v4, o.Owner, real[1:]) },
		"foreign_rule": func(t *testing.T, real, others []jump) {
			saveJumps(v4, o.Owner, append(real, others[0]))
		},
		"garbage": func(t *testing.T, _, _ []jump) {
			j, err := jumpsFileFor(v4, o.Owner)
			if err != nil {
				t.Fatal(err)
			}
			d, err := j.dir(false)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Overwrite(j.name, []byte("INPUT 7\nPREROUTING x\n")); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			b, fake := onFake(t)
			ensureAll(t, b, []fwtest.Case{o, other})
			real, ok := loadJumps(v4, o.Owner)
			others, ok2 := loadJumps(v4, other.Owner)
			if !ok || !ok2 {
				t.Fatalf("no records after Ensure: %v %v", real, others)
			}
			lie(t, real, others)
			if err := b.Remove(ctx, o.Owner); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			assertGone(t, fake, o.Owner)
			assertHolds(t, fake, other.Owner, other.Rules)
		})
	}
}

// everyCall returns each call of the backend for o and r, by name.
func everyCall(b *Backend, o fwapi.Owner, r fwapi.Rules) map[string]func() error {
	ctx := context.Background()
	return map[string]func() error{
		"Ensure": func() error { return b.Ensure(ctx, o, r) },
		"Check":  func() error { return b.Check(ctx, o, r) },
		"Remove": func() error { return b.Remove(ctx, o) },
		"GC":     func() error { return b.GC(ctx, o.Plugin, o.Network, nil) },
		"Mapped": func() error { _, err := b.Mapped(ctx, o); return err },
	}
}

// TestFakeBridgeChains: the rules iptables lacks (spoof check, isolation)
// go to our nftables tables on the same socket: Check finds them, names a
// table deleted behind our back, Ensure writes it again, and Remove
// leaves no chain, rule or map element of the owner in any table.
func TestFakeBridgeChains(t *testing.T) {
	ctx := context.Background()
	b, fake := onFake(t)
	o, r := fwtest.BridgeOwner, fwtest.BridgeRules(t)
	r.Isolation = fwtest.IsolationRules(func(i *fwapi.Isolation) { i.NoICC = true }).Isolation
	if err := b.Ensure(ctx, o, r); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := b.Check(ctx, o, r); err != nil {
		t.Errorf("Check: %v", err)
	}
	spoof := netfilter.Table{Family: "bridge", Name: "cnisuite_spoofcheck"}
	if !fake.DeleteTable(spoof) {
		t.Fatalf("no table %s after Ensure:\n%s", spoof.Name, fake.Dump())
	}
	if err := b.Check(ctx, o, r); !errors.Is(err, fwapi.ErrMissing) {
		t.Errorf("Check without the spoof check's table = %v, want fwapi.ErrMissing", err)
	}
	if err := b.Ensure(ctx, o, r); err != nil {
		t.Fatalf("Ensure to repair: %v", err)
	}
	if err := b.Check(ctx, o, r); err != nil {
		t.Errorf("Check after the repairing Ensure: %v", err)
	}
	if err := b.Remove(ctx, o); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	assertGone(t, fake, o)
	if dump := fake.Dump(); strings.Contains(dump, "jump ") || strings.Contains(dump, "cnisuite ") {
		t.Errorf("Remove left a jump or a rule of the owner:\n%s", dump)
	}
}
