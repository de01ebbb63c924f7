package netfilter_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// TestReads: every read of the Conn over the base ruleset, found and not
// found, and a name too long to exist (which the kernel would refuse with
// ERANGE rather than say it names nothing).
func TestReads(t *testing.T) {
	_, conn := newFake(t)
	long := strings.Repeat("x", 300)
	if ok, err := conn.TableExists(fam, "t"); !ok || err != nil {
		t.Errorf("TableExists(t) = %v, %v; want true", ok, err)
	}
	for _, name := range []string{"zz", long} {
		if ok, err := conn.TableExists(fam, name); ok || err != nil {
			t.Errorf("TableExists(%.5s) = %v, %v; want false, nil", name, ok, err)
		}
	}
	if ok, err := conn.ChainExists(fam, "t", "a"); !ok || err != nil {
		t.Errorf("ChainExists(a) = %v, %v; want true", ok, err)
	}
	found, use, err := conn.ChainUses([]netfilter.ChainRef{
		{Family: fam, Table: "t", Chain: "zz"}, {Family: fam, Table: "t", Chain: "c"},
		{Family: fam, Table: "t", Chain: long}, {Family: unix.NFPROTO_IPV6, Table: "t", Chain: "c"},
	})
	if err != nil || !reflect.DeepEqual(found, []bool{false, true, false, false}) || !reflect.DeepEqual(use, []uint32{0, 2, 0, 0}) {
		t.Errorf("ChainUses = %v, %v, %v; want only c, used 2", found, use, err)
	}
	if found, _, err := conn.ChainUses([]netfilter.ChainRef{{Family: fam, Table: long, Chain: "c"}}); err != nil || found[0] {
		t.Errorf("ChainUses(a long table name) = %v, %v; want not found", found, err)
	}
	other := netfilter.Table{Family: "ip", Name: "other"}
	b := &netfilter.Batch{}
	b.AddTable(other)
	b.AddChain(other, "x", nil)
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	if chains, err := conn.Chains(fam, "t"); err != nil || strings.Join(chains, " ") != "input a b c" {
		t.Errorf("Chains(t) = %v, %v; want its own four", chains, err)
	}
	for _, c := range []string{"zz", long} {
		if rs, err := conn.Rules(fam, "t", c); rs != nil || err != nil {
			t.Errorf("Rules(%.5s) = %v, %v; want none", c, rs, err)
		}
	}
	r, ok, err := conn.RuleByHandle(fam, "t", "a", 9)
	if !ok || err != nil || r.Jump != "b" || r.Handle != 9 {
		t.Errorf("RuleByHandle(a, 9) = %+v, %v, %v; want the jump to b", r, ok, err)
	}
	for _, c := range []struct {
		chain  string
		handle uint64
	}{{"a", 99}, {"b", 9}, {"zz", 9}, {long, 9}} {
		if _, ok, err := conn.RuleByHandle(fam, "t", c.chain, c.handle); ok || err != nil {
			t.Errorf("RuleByHandle(%.5s, %d) = %v, %v; want false, nil", c.chain, c.handle, ok, err)
		}
	}
	for _, set := range []string{"zz", long} {
		if es, err := conn.MapElems(fam, "t", set); es != nil || err != nil {
			t.Errorf("MapElems(%.5s) = %v, %v; want none", set, es, err)
		}
	}
}

// TestGetElem: an element read by key (in an interval map, by a key its
// range holds), and one missing.
func TestGetElem(t *testing.T) {
	_, conn := newFake(t)
	for _, tc := range []struct {
		set      string
		key, end []byte
		found    bool
		want     string
	}{
		{"dn", []byte{10, 0, 0, 1}, nil, true, "\xc0\x00\x02\x01 one"},
		{"dn", []byte{10, 0, 0, 2}, nil, false, ""},
		{"rng", ppKey(6, 8050), nil, true, "c"},
		{"rng", ppKey(6, 8000), ppKey(6, 8100), true, "c"},
		{"rng", ppKey(17, 8050), nil, false, ""},
		{"zz", []byte{1}, nil, false, ""},
		{strings.Repeat("x", 300), []byte{1}, nil, false, ""},
	} {
		el, found, err := conn.GetElem(fam, "t", tc.set, tc.key, tc.end)
		got := string(el.Data) + el.Chain
		if el.Comment != "" {
			got += " " + el.Comment
		}
		if err != nil || found != tc.found || got != tc.want {
			t.Errorf("GetElem(%.5s, %x) = %q, %v, %v; want %q, %v", tc.set, tc.key, got, found, err, tc.want, tc.found)
		}
	}
}

// TestApplyEcho: the rules added with echo come back with their handles,
// in order; a refused batch echoes none.
func TestApplyEcho(t *testing.T) {
	_, conn := newFake(t)
	b := &netfilter.Batch{}
	b.AddXTRuleEcho(tab, "c", []expr.Any{jump("a")}, 0)
	b.AddXTRule(tab, "c", []expr.Any{&expr.Counter{}}, 0)
	b.AddXTRuleEcho(tab, "c", []expr.Any{jump("b")}, 0)
	echoed, err := conn.ApplyEcho(b)
	if err != nil || len(echoed) != 2 || echoed[0].Handle != 11 || echoed[0].Jump != "a" || echoed[1].Handle != 13 || echoed[1].Jump != "b" {
		t.Errorf("ApplyEcho = %+v, %v; want the jumps to a (11) and b (13)", echoed, err)
	}
	b = &netfilter.Batch{}
	b.AddXTRuleEcho(tab, "c", []expr.Any{jump("a")}, 0)
	b.DelChain(tab, "zz")
	if echoed, err := conn.ApplyEcho(b); len(echoed) != 0 || !errors.Is(err, unix.ENOENT) {
		t.Errorf("ApplyEcho(refused) = %+v, %v; want nothing echoed, ENOENT", echoed, err)
	}
}

// TestBatchState: what a Batch reports of itself, and a batch failed
// while being built is never sent.
func TestBatchState(t *testing.T) {
	fake, conn := newFake(t)
	b := &netfilter.Batch{}
	if !b.Empty() || b.Deletes() || b.Err() != nil {
		t.Errorf("a new batch: Empty %v, Deletes %v, Err %v", b.Empty(), b.Deletes(), b.Err())
	}
	if err := conn.Apply(b); err != nil || fake.Commits() != 1 {
		t.Errorf("Apply(empty) = %v after %d commits; want nil, nothing sent", err, fake.Commits())
	}
	o := &netfilter.Batch{}
	o.DelChain(tab, "c")
	b.AddChain(tab, "d", nil)
	b.Append(o)
	b.Append(nil)
	if b.Empty() || !b.Deletes() {
		t.Errorf("after Append: Empty %v, Deletes %v; want a batch that deletes", b.Empty(), b.Deletes())
	}
	bad := &netfilter.Batch{}
	bad.Fail(errors.New("first"))
	bad.Fail(errors.New("second"))
	b.Append(bad)
	if err := conn.Apply(b); err == nil || err.Error() != "first" || fake.Commits() != 1 {
		t.Errorf("Apply(failed batch) = %v after %d commits; want the first error, nothing sent", err, fake.Commits())
	}
	u := &netfilter.Batch{}
	u.AddRule(tab, "c", []expr.Any{&expr.Numgen{Type: 99}}, "")
	if u.Err() == nil {
		t.Error("AddRule(an expression that cannot be encoded): no error")
	}
}

// TestFaults: a commit that fails applies nothing and returns the
// kernel's errno; reads refused return the errno, wrapped; a table that
// vanishes between two calls reads as missing.
func TestFaults(t *testing.T) {
	fake, conn := newFake(t)
	fake.FailNext(unix.ENOMEM)
	b := &netfilter.Batch{}
	b.AddChain(tab, "d", nil)
	if err := conn.Apply(b); !errors.Is(err, unix.ENOMEM) {
		t.Errorf("Apply with the commit failing = %v, want ENOMEM", err)
	}
	if ok, _ := conn.ChainExists(fam, "t", "d"); ok {
		t.Error("the failed commit added chain d")
	}
	fake.FailReads(unix.EPERM)
	reads := map[string]func() error{
		"TableExists": func() error { _, err := conn.TableExists(fam, "t"); return err },
		"ChainUse":    func() error { _, _, err := conn.ChainUse(fam, "t", "a"); return err },
		"Chains":      func() error { _, err := conn.Chains(fam, "t"); return err },
		"Rules":       func() error { _, err := conn.Rules(fam, "t", "a"); return err },
		"RuleByHandle": func() error {
			_, _, err := conn.RuleByHandle(fam, "t", "a", 9)
			return err
		},
		"MapElems": func() error { _, err := conn.MapElems(fam, "t", "dn"); return err },
		"GetElem":  func() error { _, _, err := conn.GetElem(fam, "t", "dn", []byte{10, 0, 0, 1}, nil); return err },
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s refused = %v, want EPERM", name, err)
		}
	}
	fake.FailReads(0)
	fake.After(1, func() { fake.DeleteTable(tab) })
	if ok, err := conn.TableExists(fam, "t"); !ok || err != nil {
		t.Fatalf("TableExists before it vanishes = %v, %v", ok, err)
	}
	if ok, err := conn.TableExists(fam, "t"); ok || err != nil {
		t.Errorf("TableExists after it vanished = %v, %v; want false", ok, err)
	}
	if fake.DeleteTable(tab) {
		t.Error("DeleteTable of a vanished table: true")
	}
}

// TestLargeTransactionOverFake: a transaction past the socket's default buffers
// grows them and commits; one whose last message is refused commits
// nothing.
func TestLargeTransactionOverFake(t *testing.T) {
	_, conn := newFake(t)
	b := &netfilter.Batch{}
	for i := range 3000 {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 1, byte(i >> 8), byte(i)}, Data: []byte{1, 2, 3, 4}}, true)
	}
	for range 100 {
		b.AddXTRuleEcho(tab, "c", []expr.Any{&expr.Counter{}}, 0)
	}
	if echoed, err := conn.ApplyEcho(b); err != nil || len(echoed) != 100 {
		t.Fatalf("ApplyEcho(3,100 messages) = %d rules, %v; want 100", len(echoed), err)
	}
	refused := &netfilter.Batch{}
	for i := range 3000 {
		refused.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 2, byte(i >> 8), byte(i)}, Data: []byte{1, 2, 3, 4}}, true)
	}
	refused.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 1, 0, 0}, Data: []byte{1, 2, 3, 4}}, true)
	if err := conn.Apply(refused); !errors.Is(err, unix.EEXIST) {
		t.Errorf("Apply(3,001 elements, the last held) = %v, want EEXIST", err)
	}
	if es, err := conn.MapElems(fam, "t", "dn"); err != nil || len(es) != 3001 {
		t.Errorf("MapElems after them = %d elements, %v; want 3001", len(es), err)
	}
}

// TestParseExprs: the expressions of our fixed rules read back from a
// dump as they were written; a kind it does not know reads as not ok.
func TestParseExprs(t *testing.T) {
	_, conn := newFake(t)
	want := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("eth0")},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 255, 0, 0}, Xor: []byte{0, 0, 0, 0}},
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderNtoh, Len: 4, Size: 2},
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Lookup{SourceRegister: 1, SetName: "dn", DestRegister: 2, IsDestRegSet: true},
		&expr.Immediate{Register: 1, Data: []byte{10, 0, 0, 1}},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1},
		&expr.Masq{},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: "a"},
	}
	b := &netfilter.Batch{}
	b.AddRule(tab, "c", want, "")
	b.AddRule(tab, "c", []expr.Any{&expr.Counter{}}, "")
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	rs, err := conn.Rules(fam, "t", "c")
	if err != nil || len(rs) != 2 {
		t.Fatalf("Rules(c) = %v, %v", rs, err)
	}
	if got, ok := netfilter.ParseExprs(fam, rs[0].Exprs); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseExprs = %v, %v; want %v", got, ok, want)
	}
	if _, ok := netfilter.ParseExprs(fam, rs[1].Exprs); ok {
		t.Error("ParseExprs(counter) ok, want not ok (a kind our rules do not use)")
	}
	if _, ok := netfilter.ParseExprs(fam, []byte{1, 2}); ok {
		t.Error("ParseExprs(garbage) ok")
	}
	if kinds := netfilter.RawExprs(rs[1].Exprs); len(kinds) != 1 || kinds[0].Name != "counter" {
		t.Errorf("RawExprs(counter) = %v", kinds)
	}
}

// peer is a Peer of canned answers, for what the fake never answers.
type peer func(datagram []byte) ([][]byte, error)

func (p peer) Exchange(d []byte) ([][]byte, error) { return p(d) }

// TestBrokenPeer: a send that fails, an answer that never comes, and a
// malformed answer are errors, not hangs or panics.
func TestBrokenPeer(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    peer
		want string
	}{
		{"send fails", func([]byte) ([][]byte, error) { return nil, unix.ENOBUFS }, "netlink send"},
		{"no answer", func([]byte) ([][]byte, error) { return nil, nil }, "receive"},
		{"bad length", func([]byte) ([][]byte, error) {
			return [][]byte{{200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, nil
		}, "bad message length"},
	} {
		conn := netfilter.DialPeer(tc.p)
		_, err := conn.TableExists(fam, "t")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: TableExists = %v, want an error saying %q", tc.name, err, tc.want)
		}
		_, _, err = conn.ChainUses([]netfilter.ChainRef{{Family: fam, Table: "t", Chain: "a"}})
		if err == nil {
			t.Errorf("%s: ChainUses = nil error", tc.name)
		}
		b := &netfilter.Batch{}
		b.AddTable(tab)
		if err := conn.Apply(b); err == nil {
			t.Errorf("%s: Apply = nil error", tc.name)
		}
		conn.Close()
		conn.Close()
	}
	var nilConn *netfilter.Conn
	nilConn.Close()
}

// A Conn used after Close fails as a closed socket does (EBADF), whether
// it was over the kernel or a Peer: a cleanup that runs after the Close it
// deferred gets an error, not a panic.
func TestUseAfterClose(t *testing.T) {
	_, conn := newFake(t)
	conn.Close()
	if _, err := conn.TableExists(fam, "t"); !errors.Is(err, unix.EBADF) {
		t.Errorf("TableExists after Close = %v, want EBADF", err)
	}
	b := &netfilter.Batch{}
	b.AddTable(tab)
	if err := conn.Apply(b); !errors.Is(err, unix.EBADF) {
		t.Errorf("Apply after Close = %v, want EBADF", err)
	}
}

// TestDial opens and closes a kernel socket; it sends nothing, so it
// reads nothing of the machine's rules.
func TestDial(t *testing.T) {
	conn, err := netfilter.Dial()
	if err != nil {
		t.Skipf("no netfilter netlink socket here: %v", err)
	}
	conn.Close()
}
