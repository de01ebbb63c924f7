package nftfake_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// The sequence of batches and reads the differential test runs against
// the kernel and the fake.

var tab = netfilter.Table{Family: "ip", Name: "t"}

const fam = unix.NFPROTO_IPV4

// Datatypes of nft: ifname, ipv4_addr, inet_proto . inet_service.
const (
	ifnameType = 41
	addrType   = 7
	protoPort  = 12<<6 | 13
)

func ifname(s string) []byte { return append([]byte(s), make([]byte, 16-len(s))...) }

func addr(a, b, c, d byte) []byte { return []byte{a, b, c, d} }

// pp is a key of proto . service, each field padded to four bytes.
func pp(proto byte, port uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte{proto, 0, 0, 0}, port)[:6:6]
}

func ppKey(proto byte, port uint16) []byte { return append(pp(proto, port), 0, 0) }

func jump(chain string) expr.Any { return &expr.Verdict{Kind: expr.VerdictJump, Chain: chain} }

// step is one batch of the sequence; its answer is its errno and, for a
// batch that echoes, the echoed rules.
type step struct {
	name  string
	batch func(b *netfilter.Batch)
}

func setup(b *netfilter.Batch) {
	b.AddTable(tab)
	b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1, Prio: 0})
	for _, c := range []string{"a", "b", "c"} {
		b.AddChain(tab, c, nil)
	}
	b.AddSet(tab, netfilter.SetSpec{Name: "vm", KeyType: ifnameType, KeyLen: 16, Verdict: true})
	b.AddSet(tab, netfilter.SetSpec{Name: "dn", KeyType: addrType, KeyLen: 4, DataType: addrType, DataLen: 4})
	b.AddSet(tab, netfilter.SetSpec{Name: "rng", KeyType: protoPort, KeyLen: 8, Interval: true, FieldLens: []uint32{1, 2}, DataType: addrType, DataLen: 4})
	b.AddElem(tab, "vm", ifname("eth0"), "b")
	b.AddElem(tab, "vm", ifname("eth1"), "c")
	b.AddSetElem(tab, "dn", netfilter.Elem{Key: addr(10, 0, 0, 1), Data: addr(192, 0, 2, 1), Comment: "one"}, true)
	b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(6, 8000), End: ppKey(6, 8100), Data: addr(10, 0, 0, 9), Comment: "r"}, true)
	id := b.AddAnonSet(tab, netfilter.AnonSet{KeyType: 13, KeyLen: 2, Elems: []netfilter.SetElem{{Key: pp(0, 80)[4:]}, {Key: pp(0, 443)[4:]}}})
	b.AddRule(tab, "input", []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, SetName: netfilter.AnonSetName, SetID: id},
		&expr.Counter{},
	}, "web")
	b.AddRule(tab, "input", []expr.Any{&expr.Counter{}, jump("a")}, "to a")
	b.AddRule(tab, "input", []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: "vm", IsDestRegSet: true, DestRegister: 0},
	}, "vmap")
	b.AddXTRule(tab, "a", []expr.Any{&expr.Counter{}}, 0)
	b.AddXTRuleEcho(tab, "a", []expr.Any{jump("b")}, 0)
	b.AddXTRuleEcho(tab, "b", []expr.Any{&expr.Counter{}}, 0)
}

var steps = []step{
	{"setup", setup},
	{"rule in a missing chain", func(b *netfilter.Batch) {
		b.AddChain(tab, "d", nil)
		b.AddRule(tab, "zz", []expr.Any{&expr.Counter{}}, "")
	}},
	{"jump to a missing chain", func(b *netfilter.Batch) { b.AddRule(tab, "c", []expr.Any{jump("zz")}, "") }},
	{"jump to a base chain", func(b *netfilter.Batch) { b.AddRule(tab, "c", []expr.Any{jump("input")}, "") }},
	{"delete a chain jumped to", func(b *netfilter.Batch) { b.DelChain(tab, "a") }},
	{"delete a chain a map element leads to", func(b *netfilter.Batch) { b.DelChain(tab, "c") }},
	{"delete a missing chain", func(b *netfilter.Batch) { b.DelChain(tab, "zz") }},
	{"delete a missing rule", func(b *netfilter.Batch) { b.DelRule(tab, "a", 999) }},
	{"flush a missing chain", func(b *netfilter.Batch) { b.FlushNew(tab, "zz") }},
	{"a rule after refused ones", func(b *netfilter.Batch) { b.AddXTRuleEcho(tab, "c", []expr.Any{&expr.Counter{}}, 0) }},
	{"a second rule reading the anonymous set", func(b *netfilter.Batch) {
		b.AddRule(tab, "c", []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Lookup{SourceRegister: 1, SetName: "__set0"},
		}, "")
	}},
	{"an element of the anonymous set", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "__set0", netfilter.Elem{Key: []byte{0, 22}}, false)
	}},
	{"create an element held", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: addr(10, 0, 0, 1), Data: addr(192, 0, 2, 1)}, true)
	}},
	{"add an element held, same data", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: addr(10, 0, 0, 1), Data: addr(192, 0, 2, 1), Comment: "other"}, false)
	}},
	{"add an element held, other data", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "dn", netfilter.Elem{Key: addr(10, 0, 0, 1), Data: addr(192, 0, 2, 2)}, false)
	}},
	{"a map element jumping to a missing chain", func(b *netfilter.Batch) { b.AddElem(tab, "vm", ifname("eth2"), "zz") }},
	{"a range overlapping at its start", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(6, 8050), End: ppKey(6, 8200), Data: addr(10, 0, 0, 9)}, false)
	}},
	{"a range overlapping at its end", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(6, 7000), End: ppKey(6, 8000), Data: addr(10, 0, 0, 9)}, false)
	}},
	{"the same range, created", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(6, 8000), End: ppKey(6, 8100), Data: addr(10, 0, 0, 9)}, true)
	}},
	{"a range of another proto", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(17, 8000), End: ppKey(17, 8100), Data: addr(10, 0, 0, 8), Comment: "u"}, true)
	}},
	{"a reversed range", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(6, 9100), End: ppKey(6, 9000), Data: addr(10, 0, 0, 9)}, false)
	}},
	{"a set again, otherwise", func(b *netfilter.Batch) {
		b.AddSet(tab, netfilter.SetSpec{Name: "dn", KeyType: addrType, KeyLen: 4})
	}},
	{"a set again, the same", func(b *netfilter.Batch) {
		b.AddSet(tab, netfilter.SetSpec{Name: "dn", KeyType: addrType, KeyLen: 4, DataType: addrType, DataLen: 4})
	}},
	{"delete a missing element", func(b *netfilter.Batch) { b.DelElem(tab, "dn", addr(10, 9, 9, 9)) }},
	{"delete a range by its start and another end", delRange(ppKey(17, 8000), ppKey(17, 8050))},
	{"delete a range by a key inside and its end", delRange(ppKey(17, 8050), ppKey(17, 8100))},
	{"delete a range by a key inside it", delRange(ppKey(17, 8050), nil)},
	{"delete a range by its start alone", delRange(ppKey(17, 8000), nil)},
	{"delete a range by its end alone", delRange(ppKey(17, 8100), nil)},
	{"delete a range by a key past it", delRange(ppKey(17, 8101), nil)},
	{"delete a range", func(b *netfilter.Batch) { b.DelElemRange(tab, "rng", ppKey(17, 8000), ppKey(17, 8100)) }},
	{"a chain again, hooked otherwise", func(b *netfilter.Batch) {
		b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1, Prio: 10})
	}},
	{"a regular chain again, hooked", func(b *netfilter.Batch) {
		b.AddChain(tab, "a", &netfilter.Hook{Type: "filter", Num: 1, Prio: 0})
	}},
	{"both chains again", func(b *netfilter.Batch) {
		b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1, Prio: 0})
		b.AddChain(tab, "a", nil)
	}},
	{"delete the jump, then its chain", func(b *netfilter.Batch) {
		b.FlushChain(tab, "input")
		b.DelChain(tab, "a")
	}},
	{"delete a chain holding rules, jumped to by none", func(b *netfilter.Batch) {
		b.DelElem(tab, "vm", ifname("eth1"))
		b.DelChain(tab, "c")
	}},
	{"an element of the anonymous set, its rule gone", func(b *netfilter.Batch) {
		b.AddSetElem(tab, "__set0", netfilter.Elem{Key: []byte{0, 22}}, false)
	}},
	{"many elements", func(b *netfilter.Batch) {
		for i := range 1000 { // a dump of more than one datagram
			b.AddSetElem(tab, "dn", netfilter.Elem{Key: addr(10, 1, byte(i>>8), byte(i)), Data: addr(192, 0, 2, byte(i)), Comment: fmt.Sprint("e", i)}, true)
		}
	}},
	{"rules in another table", func(b *netfilter.Batch) {
		o := netfilter.Table{Family: "ip", Name: "other"}
		b.AddTable(o)
		b.AddChain(o, "x", nil)
		b.AddXTRuleEcho(o, "x", []expr.Any{&expr.Counter{}}, 0)
	}},
}

// delRange deletes an element of rng by key (and end), then adds the
// range 17 . 8000-8100 back: the batch succeeds only if what was deleted
// was that range.
func delRange(key, end []byte) func(b *netfilter.Batch) {
	return func(b *netfilter.Batch) {
		b.DelElemRange(tab, "rng", key, end)
		b.AddSetElem(tab, "rng", netfilter.Elem{Key: ppKey(17, 8000), End: ppKey(17, 8100), Data: addr(10, 0, 0, 8), Comment: "u"}, true)
	}
}

// transcript runs the steps on conn, reading the ruleset back after each.
func transcript(conn *netfilter.Conn) []string {
	var out []string
	for _, s := range steps {
		b := &netfilter.Batch{}
		s.batch(b)
		echoed, err := conn.ApplyEcho(b)
		out = append(out, fmt.Sprintf("%s: %s, echoed %s", s.name, errnoText(err), rulesText(echoed)))
		out = append(out, read(conn)...)
	}
	return out
}

func errnoText(err error) string {
	var e unix.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &e):
		return "errno " + unix.ErrnoName(e)
	}
	return "error " + err.Error()
}

func rulesText(rules []netfilter.Rule) string {
	var w []string
	for _, r := range rules {
		w = append(w, fmt.Sprintf("%s#%d %q->%q", r.Chain, r.Handle, r.Comment, r.Jump))
	}
	return "[" + strings.Join(w, " ") + "]"
}

// read lists what the Conn's reads answer about table t.
func read(conn *netfilter.Conn) []string {
	var out []string
	add := func(what string, v any, err error) {
		out = append(out, fmt.Sprintf("  %s: %v %s", what, v, errnoText(err)))
	}
	chains, err := conn.Chains(fam, tab.Name)
	add("chains", chains, err)
	for _, c := range append(chains, "zz") {
		rules, err := conn.Rules(fam, tab.Name, c)
		add("rules of "+c, rulesText(rules), err)
	}
	var refs []netfilter.ChainRef
	for _, c := range []string{"input", "a", "b", "c", "zz"} {
		refs = append(refs, netfilter.ChainRef{Family: fam, Table: tab.Name, Chain: c})
	}
	found, uses, err := conn.ChainUses(refs)
	add("uses", fmt.Sprint(found, uses), err)
	for _, set := range []string{"vm", "dn", "rng", "zz"} {
		elems, err := conn.MapElems(fam, tab.Name, set)
		add("elements of "+set, elemsText(elems), err)
	}
	ok, err := conn.TableExists(fam, tab.Name)
	add("table", ok, err)
	ok, err = conn.TableExists(unix.NFPROTO_IPV6, tab.Name)
	add("ip6 table", ok, err)
	r, ok, err := conn.RuleByHandle(fam, tab.Name, "a", 13)
	add("rule a#13", fmt.Sprint(ok, " ", rulesText([]netfilter.Rule{r})), err)
	for _, k := range []struct{ key, end []byte }{
		{ppKey(6, 8000), ppKey(6, 8100)}, {ppKey(6, 8000), ppKey(6, 8050)}, {ppKey(6, 8050), ppKey(6, 8050)}, {ppKey(6, 9000), nil},
	} {
		el, ok, err := conn.GetElem(fam, tab.Name, "rng", k.key, k.end)
		add("get rng "+hex.EncodeToString(k.key)+"-"+hex.EncodeToString(k.end), fmt.Sprint(ok, " ", elemsText([]netfilter.Elem{el})), err)
	}
	el, ok, err := conn.GetElem(fam, tab.Name, "dn", addr(10, 0, 0, 1), nil)
	add("get dn 10.0.0.1", fmt.Sprint(ok, " ", elemsText([]netfilter.Elem{el})), err)
	return out
}

// elemsText renders elements in key order (the kernel's hash sets list
// them in hash order).
func elemsText(elems []netfilter.Elem) string {
	var w []string
	for _, e := range elems {
		w = append(w, fmt.Sprintf("%x-%x:%s%x %q", e.Key, e.End, e.Chain, e.Data, e.Comment))
	}
	slices.Sort(w)
	if len(w) > 10 { // the first three and a digest of all
		return fmt.Sprintf("%d %v... sha256 %x", len(w), w[:3], sha256.Sum256([]byte(strings.Join(w, "\n"))))
	}
	return fmt.Sprint(len(w), w)
}
