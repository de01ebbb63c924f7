package netfilter_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
)

// These tests run every Conn and Batch operation over nftfake's
// in-memory ruleset, without root: Conn's encoders and decoders are the
// ones the kernel socket uses (the fake's fidelity is proven against the
// kernel by nftfake's differential test).

var tab = netfilter.Table{Family: "ip", Name: "t"}

const fam = unix.NFPROTO_IPV4

func ifname(s string) []byte { return append([]byte(s), make([]byte, 16-len(s))...) }

// ppKey is a key of inet_proto . inet_service, each field padded.
func ppKey(proto byte, port uint16) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{proto, 0, 0, 0}, port), 0, 0)
}

func jump(chain string) expr.Any { return &expr.Verdict{Kind: expr.VerdictJump, Chain: chain} }

// base is the ruleset each case starts from: a base chain jumping to a,
// a jumping to b, a verdict map leading to c, a data map, an interval map
// of proto . port ranges.
func base(b *netfilter.Batch) {
	b.AddTable(tab)
	b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1})
	for _, c := range []string{"a", "b", "c"} {
		b.AddChain(tab, c, nil)
	}
	b.AddSet(tab, netfilter.SetSpec{Name: "vm", KeyType: 41, KeyLen: 16, Verdict: true, Udata: []byte{1}})
	b.AddSet(tab, netfilter.SetSpec{Name: "dn", KeyType: 7, KeyLen: 4, DataType: 7, DataLen: 4})
	b.AddSet(tab, netfilter.SetSpec{Name: "rng", KeyType: 12<<6 | 13, KeyLen: 8, Interval: true, FieldLens: []uint32{1, 2}, Verdict: true})
	b.AddElem(tab, "vm", ifname("eth0"), "c")
	b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 0, 0, 1}, Data: []byte{192, 0, 2, 1}, Comment: "one"}, true)
	b.AddElemRange(tab, "rng", ppKey(6, 8000), ppKey(6, 8100), "c")
	b.AddRule(tab, "input", []expr.Any{&expr.Counter{}, jump("a")}, "to a")
	b.AddRule(tab, "a", []expr.Any{jump("b")}, "")
	b.AddXTRule(tab, "b", []expr.Any{&expr.Counter{}}, 6)
}

func newFake(t *testing.T) (*nftfake.Fake, *netfilter.Conn) {
	t.Helper()
	fake, conn := nftfake.NewConn(t)
	b := &netfilter.Batch{}
	base(b)
	if err := conn.Apply(b); err != nil {
		t.Fatalf("Apply(base) = %v", err)
	}
	return fake, conn
}

// batchCases are the operations TestBatch runs over the base ruleset:
// the errno each batch gets, and what a read sees after it.
var batchCases = []struct {
	name  string
	batch func(b *netfilter.Batch)
	errno unix.Errno
	check func(conn *netfilter.Conn) string // "" when what it reads is right
}{
	{"table and chain again", func(b *netfilter.Batch) { b.AddTable(tab); b.AddChain(tab, "a", nil) }, 0, uses("a", 2)},
	{"a base chain again with another hook", func(b *netfilter.Batch) {
		b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1, Prio: 5})
	}, unix.EOPNOTSUPP, uses("input", 1)},
	{"a rule with a comment", func(b *netfilter.Batch) {
		b.AddRule(tab, "c", []expr.Any{&expr.Counter{}}, "hello")
	}, 0, rules("c", `c#11 "hello"->""`)},
	{"an iptables-nft comment", func(b *netfilter.Batch) {
		info := xt.Unknown("from iptables\x00\x00\x00")
		b.AddXTRule(tab, "c", []expr.Any{&expr.Match{Name: "comment", Info: &info}, jump("b")}, 0)
	}, 0, rules("c", `c#11 "from iptables"->"b"`)},
	{"a rule in a missing chain", func(b *netfilter.Batch) { b.AddRule(tab, "zz", nil, "") }, unix.ENOENT, rules("c", "")},
	{"a jump to a missing chain", func(b *netfilter.Batch) { b.AddRule(tab, "c", []expr.Any{jump("zz")}, "") }, unix.ENOENT, rules("c", "")},
	{"delete a rule", func(b *netfilter.Batch) { b.DelRule(tab, "input", 8) }, 0, both(rules("input", ""), uses("a", 1))},
	{"delete a missing rule", func(b *netfilter.Batch) { b.DelRule(tab, "input", 99) }, unix.ENOENT, rules("input", `input#8 "to a"->"a"`)},
	{"flush a chain", func(b *netfilter.Batch) { b.FlushChain(tab, "a") }, 0, both(rules("a", ""), uses("b", 1))},
	{"flush a new chain", func(b *netfilter.Batch) { b.AddChain(tab, "d", nil); b.FlushNew(tab, "d") }, 0, uses("d", 0)},
	{"delete a chain jumped to", func(b *netfilter.Batch) { b.DelChain(tab, "a") }, unix.EBUSY, uses("a", 2)},
	{"delete a chain a map leads to", func(b *netfilter.Batch) { b.DelChain(tab, "c") }, unix.EBUSY, uses("c", 2)},
	{"delete a missing chain", func(b *netfilter.Batch) { b.DelChain(tab, "zz") }, unix.ENOENT, uses("zz", -1)},
	{"delete the jump, then its chain and its rules", func(b *netfilter.Batch) {
		b.DelRule(tab, "input", 8)
		b.DelChain(tab, "a")
	}, 0, both(uses("a", -1), uses("b", 1))},
	{"one refused message refuses the batch", func(b *netfilter.Batch) {
		b.AddChain(tab, "d", nil)
		b.DelChain(tab, "zz")
	}, unix.ENOENT, uses("d", -1)},
	{"a map element", func(b *netfilter.Batch) { b.AddElem(tab, "vm", ifname("eth1"), "b") }, 0,
		both(uses("b", 3), elems("vm", "eth0->c", "eth1->b"))},
	{"a map element to a missing chain", func(b *netfilter.Batch) { b.AddElem(tab, "vm", ifname("eth1"), "zz") }, unix.ENOENT, elems("vm", "eth0->c")},
	{"delete a map element", func(b *netfilter.Batch) { b.DelElem(tab, "vm", ifname("eth0")) }, 0, both(elems("vm"), uses("c", 1))},
	{"delete a missing element", func(b *netfilter.Batch) { b.DelElem(tab, "vm", ifname("eth9")) }, unix.ENOENT, elems("vm", "eth0->c")},
	{"create an element held", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 0, 0, 1}, Data: []byte{192, 0, 2, 1}}, true)
	}, unix.EEXIST, elems("dn", `0a000001->c0000201 "one"`)},
	{"add an element held, same data", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 0, 0, 1}, Data: []byte{192, 0, 2, 1}}, false)
	}, 0, elems("dn", `0a000001->c0000201 "one"`)},
	{"add an element held, other data", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 0, 0, 1}, Data: []byte{192, 0, 2, 2}}, false)
	}, unix.EEXIST, elems("dn", `0a000001->c0000201 "one"`)},
	{"an element of the wrong size", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: []byte{10, 0, 1}, Data: []byte{192, 0, 2, 2}}, false)
	}, unix.EINVAL, elems("dn", `0a000001->c0000201 "one"`)},
	{"an overlapping range", func(b *netfilter.Batch) { b.AddElemRange(tab, "rng", ppKey(6, 8050), ppKey(6, 9000), "b") }, unix.EEXIST, uses("b", 2)},
	{"a range apart", func(b *netfilter.Batch) { b.AddElemRange(tab, "rng", ppKey(17, 8050), ppKey(17, 9000), "b") }, 0, uses("b", 3)},
	{"delete a range", func(b *netfilter.Batch) { b.DelElemRange(tab, "rng", ppKey(6, 8000), ppKey(6, 8100)) }, 0, uses("c", 1)},
	{"an anonymous set a rule reads", func(b *netfilter.Batch) {
		id := b.AddAnonSet(tab, netfilter.AnonSet{KeyType: 13, KeyLen: 2, Interval: true, UserData: []byte{0}, Elems: []netfilter.SetElem{
			{Key: []byte{0, 80}}, {Key: []byte{0, 81}, End: true},
		}})
		b.AddRule(tab, "c", []expr.Any{&expr.Lookup{SourceRegister: 1, SetName: netfilter.AnonSetName, SetID: id}}, "web")
	}, 0, rules("c", `c#12 "web"->""`)},
	{"a set again, otherwise", func(b *netfilter.Batch) { b.AddSet(tab, netfilter.SetSpec{Name: "dn", KeyType: 7, KeyLen: 4}) }, unix.EEXIST, elems("dn", `0a000001->c0000201 "one"`)},
}

// TestBatch: each operation as the kernel answers it, and what a read
// sees after it (a refused batch changes nothing: the check sees the base).
func TestBatch(t *testing.T) {
	for _, tc := range batchCases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			fake, conn := newFake(t)
			b := &netfilter.Batch{}
			tc.batch(b)
			err := conn.Apply(b)
			if got := errnoOf(err); got != tc.errno {
				t.Errorf("Apply = %v, want errno %d (%v)", err, tc.errno, tc.errno)
			}
			if msg := tc.check(conn); msg != "" {
				t.Errorf("%s; the ruleset:\n%s", msg, fake.Dump())
			}
		})
	}
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	if err != nil {
		return unix.Errno(0xffff)
	}
	return 0
}

// uses checks a chain's use count (-1: the chain is missing).
func uses(chain string, want int) func(*netfilter.Conn) string {
	return func(conn *netfilter.Conn) string {
		ok, use, err := conn.ChainUse(fam, tab.Name, chain)
		got := int(use)
		if !ok {
			got = -1
		}
		if err != nil || got != want {
			return fmt.Sprintf("ChainUse(%s) = %v, %d, %v; want use %d", chain, ok, use, err, want)
		}
		return ""
	}
}

// rules checks a chain's rules as Rules lists them, "chain#handle
// "comment"->"jump"" each, joined by spaces.
func rules(chain, want string) func(*netfilter.Conn) string {
	return func(conn *netfilter.Conn) string {
		rs, err := conn.Rules(fam, tab.Name, chain)
		var w []string
		for _, r := range rs {
			w = append(w, fmt.Sprintf("%s#%d %q->%q", r.Chain, r.Handle, r.Comment, r.Jump))
		}
		if got := strings.Join(w, " "); err != nil || got != want {
			return fmt.Sprintf("Rules(%s) = %s, %v; want %s", chain, got, err, want)
		}
		return ""
	}
}

// elems checks a map's elements as MapElems lists them, in order.
func elems(set string, want ...string) func(*netfilter.Conn) string {
	return func(conn *netfilter.Conn) string {
		es, err := conn.MapElems(fam, tab.Name, set)
		var w []string
		for _, e := range es {
			k := fmt.Sprintf("%x", e.Key)
			if set == "vm" {
				k = strings.TrimRight(string(e.Key), "\x00")
			}
			s := fmt.Sprintf("%s->%s%x", k, e.Chain, e.Data)
			if e.Comment != "" {
				s += fmt.Sprintf(" %q", e.Comment)
			}
			w = append(w, s)
		}
		if got := strings.Join(w, ", "); err != nil || got != strings.Join(want, ", ") {
			return fmt.Sprintf("MapElems(%s) = %s, %v; want %s", set, got, err, strings.Join(want, ", "))
		}
		return ""
	}
}

func both(checks ...func(*netfilter.Conn) string) func(*netfilter.Conn) string {
	return func(conn *netfilter.Conn) string {
		for _, c := range checks {
			if msg := c(conn); msg != "" {
				return msg
			}
		}
		return ""
	}
}
