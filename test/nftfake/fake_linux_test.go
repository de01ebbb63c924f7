package nftfake_test

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
)

// msg builds an nftables message of family with attributes.
func msg(typ int, flags netlink.HeaderFlags, family byte, fn func(ae *netlink.AttributeEncoder)) netlink.Message {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		panic(err)
	}
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | typ), Flags: netlink.Request | flags},
		Data:   append([]byte{family, 0, 0, 0}, b...),
	}
}

// batch frames messages as one transaction, the last asking an ack.
func batch(msgs ...netlink.Message) []netlink.Message {
	begin := netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN), Flags: netlink.Request},
		Data:   []byte{0, 0, 0, unix.NFNL_SUBSYS_NFTABLES},
	}
	end := begin
	end.Header.Type = netlink.HeaderType(unix.NFNL_MSG_BATCH_END)
	msgs[len(msgs)-1].Header.Flags |= netlink.Acknowledge
	return append(append([]netlink.Message{begin}, msgs...), end)
}

// exchange sends messages in one datagram and returns the errno of each
// error answer (0 for an ack) and the types of the other answers.
func exchange(t *testing.T, f *nftfake.Fake, msgs []netlink.Message) (errnos []unix.Errno, types []netlink.HeaderType) {
	t.Helper()
	var d []byte
	for i, m := range msgs {
		m.Header.Sequence = uint32(i + 1)
		m.Header.Length = uint32(16 + len(m.Data))
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		d = append(d, b...)
	}
	answers, err := f.Exchange(d)
	if err != nil {
		t.Fatalf("Exchange = %v", err)
	}
	for _, a := range answers {
		for len(a) >= 16 {
			l := int(binary.NativeEndian.Uint32(a))
			typ := netlink.HeaderType(binary.NativeEndian.Uint16(a[4:]))
			if typ == netlink.Error {
				errnos = append(errnos, unix.Errno(-int32(binary.NativeEndian.Uint32(a[16:]))))
			} else {
				types = append(types, typ)
			}
			a = a[min((l+3)&^3, len(a)):]
		}
	}
	return errnos, types
}

func tableMsg(typ int, family byte, name string) netlink.Message {
	return msg(typ, netlink.Create, family, func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_TABLE_NAME, name) })
}

func chainMsg(flags netlink.HeaderFlags, fn func(ae *netlink.AttributeEncoder)) netlink.Message {
	return msg(unix.NFT_MSG_NEWCHAIN, flags, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, "t")
		fn(ae)
	})
}

func setMsg(fn func(ae *netlink.AttributeEncoder)) netlink.Message {
	return msg(unix.NFT_MSG_NEWSET, netlink.Create, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_TABLE, "t")
		ae.String(unix.NFTA_SET_NAME, "s")
		fn(ae)
	})
}

var long = strings.Repeat("x", 300)

// messageCases are messages a Conn does not send but the kernel parses,
// each with the errno the kernel answers it with, in a transaction on a
// table t holding a chain c with one rule.
var messageCases = []struct {
	name string
	m    netlink.Message
	want unix.Errno
}{
	{"table created again", tableMsg(unix.NFT_MSG_NEWTABLE, unix.NFPROTO_IPV4, "t"), 0},
	{"table with excl", msg(unix.NFT_MSG_NEWTABLE, netlink.Create|netlink.Excl, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_TABLE_NAME, "t")
	}), unix.EEXIST},
	{"table of no family", tableMsg(unix.NFT_MSG_NEWTABLE, 99, "t"), unix.EAFNOSUPPORT},
	{"table named too long", tableMsg(unix.NFT_MSG_NEWTABLE, unix.NFPROTO_IPV4, long), unix.ERANGE},
	{"table unnamed", msg(unix.NFT_MSG_NEWTABLE, 0, unix.NFPROTO_IPV4, func(*netlink.AttributeEncoder) {}), unix.EINVAL},
	{"delete a missing table", tableMsg(unix.NFT_MSG_DELTABLE, unix.NFPROTO_IPV6, "t"), unix.ENOENT},
	{"chain with excl", chainMsg(netlink.Create|netlink.Excl, func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_CHAIN_NAME, "c") }), unix.EEXIST},
	{"regular chain with a policy", chainMsg(netlink.Create, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_NAME, "d")
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 1)
	}), unix.EOPNOTSUPP},
	{"hook without a priority", chainMsg(netlink.Create, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_NAME, "d")
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(n *netlink.AttributeEncoder) error { n.Uint32(unix.NFTA_HOOK_HOOKNUM, 1); return nil })
	}), unix.EINVAL},
	{"policy neither accept nor drop", chainMsg(netlink.Create, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_NAME, "d")
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(n *netlink.AttributeEncoder) error {
			n.Uint32(unix.NFTA_HOOK_HOOKNUM, 1)
			n.Uint32(unix.NFTA_HOOK_PRIORITY, 0)
			return nil
		})
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 7)
	}), unix.EINVAL},
	{"base chain, drop policy", chainMsg(netlink.Create, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_NAME, "in")
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(n *netlink.AttributeEncoder) error {
			n.Uint32(unix.NFTA_HOOK_HOOKNUM, 1)
			n.Uint32(unix.NFTA_HOOK_PRIORITY, 0)
			return nil
		})
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 0)
	}), 0},
	{"set without a key length", setMsg(func(ae *netlink.AttributeEncoder) { ae.Uint32(unix.NFTA_SET_KEY_TYPE, 7) }), unix.EINVAL},
	{"map without data", setMsg(func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, 4)
	}), unix.EINVAL},
	{"map of data too long", setMsg(func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, 4)
		ae.Uint32(unix.NFTA_SET_DATA_TYPE, 7)
		ae.Uint32(unix.NFTA_SET_DATA_LEN, 100)
	}), unix.EINVAL},
	{"concatenation not making up its key", setMsg(func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_INTERVAL|0x80)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, 12)
		ae.Nested(unix.NFTA_SET_DESC, func(d *netlink.AttributeEncoder) error {
			d.Nested(2, func(c *netlink.AttributeEncoder) error {
				c.Nested(unix.NFTA_LIST_ELEM, func(f *netlink.AttributeEncoder) error { f.Uint32(1, 4); return nil })
				c.Nested(unix.NFTA_LIST_ELEM, func(f *netlink.AttributeEncoder) error { f.Uint32(1, 2); return nil })
				return nil
			})
			return nil
		})
	}), unix.EINVAL},
	{"a rule inserted first", msg(unix.NFT_MSG_NEWRULE, netlink.Create, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, "t")
		ae.String(unix.NFTA_RULE_CHAIN, "c")
	}), 0},
	{"flush the table", msg(unix.NFT_MSG_DELRULE, 0, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_RULE_TABLE, "t") }), 0},
	{"another subsystem", netlink.Message{Header: netlink.Header{Type: 0x0100, Flags: netlink.Request}, Data: []byte{2, 0, 0, 0}}, unix.EINVAL},
	{"a message the fake does not know", msg(unix.NFT_MSG_NEWOBJ, 0, unix.NFPROTO_IPV4, func(*netlink.AttributeEncoder) {}), unix.EOPNOTSUPP},
	{"delete the table", tableMsg(unix.NFT_MSG_DELTABLE, unix.NFPROTO_IPV4, "t"), 0},
}

// TestMessages: what the fake answers messages a Conn does not send but
// the kernel parses (each refused as the kernel refuses it).
func TestMessages(t *testing.T) {
	for _, tc := range messageCases {
		t.Run(tc.name, func(t *testing.T) {
			f := nftfake.New()
			conn := f.Conn()
			defer conn.Close()
			b := &netfilter.Batch{}
			b.AddTable(netfilter.Table{Family: "ip", Name: "t"})
			b.AddChain(netfilter.Table{Family: "ip", Name: "t"}, "c", nil)
			b.AddRule(netfilter.Table{Family: "ip", Name: "t"}, "c", []expr.Any{&expr.Counter{}}, "first")
			if err := conn.Apply(b); err != nil {
				t.Fatal(err)
			}
			errnos, _ := exchange(t, f, batch(tc.m))
			if len(errnos) != 1 || errnos[0] != tc.want {
				t.Errorf("answers %v, want errno %d (%v); the ruleset:\n%s", errnos, tc.want, tc.want, f.Dump())
			}
		})
	}
}

// TestRequests: gets and dumps the Conn does not send, and datagrams the
// kernel would refuse.
func TestRequests(t *testing.T) {
	f := nftfake.New()
	conn := f.Conn()
	defer conn.Close()
	tab := netfilter.Table{Family: "ip", Name: "t"}
	b := &netfilter.Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "c", nil)
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	get := msg(unix.NFT_MSG_GETTABLE, netlink.Acknowledge, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_TABLE_NAME, "t") })
	if errnos, types := exchange(t, f, []netlink.Message{get}); len(types) != 1 || len(errnos) != 1 || errnos[0] != 0 {
		t.Errorf("get table with an ack = %v, %v; want the table, then the ack", types, errnos)
	}
	dumpAll := msg(unix.NFT_MSG_GETCHAIN, netlink.Dump, unix.NFPROTO_UNSPEC, func(*netlink.AttributeEncoder) {})
	if _, types := exchange(t, f, []netlink.Message{dumpAll}); len(types) != 2 || types[1] != netlink.Done {
		t.Errorf("dump of every family's chains = %v; want the chain, then done", types)
	}
	for name, m := range map[string]netlink.Message{
		"a rule without a handle": msg(unix.NFT_MSG_GETRULE, 0, unix.NFPROTO_IPV4, func(ae *netlink.AttributeEncoder) {
			ae.String(unix.NFTA_RULE_TABLE, "t")
			ae.String(unix.NFTA_RULE_CHAIN, "c")
		}),
		"an unknown get":              msg(unix.NFT_MSG_GETOBJ, 0, unix.NFPROTO_IPV4, func(*netlink.AttributeEncoder) {}),
		"another subsystem":           {Header: netlink.Header{Type: 0x0100, Flags: netlink.Request}, Data: []byte{2, 0, 0, 0}},
		"elements of a table unnamed": msg(unix.NFT_MSG_GETSETELEM, netlink.Dump, unix.NFPROTO_IPV4, func(*netlink.AttributeEncoder) {}),
	} {
		if errnos, _ := exchange(t, f, []netlink.Message{m}); len(errnos) != 1 || errnos[0] == 0 {
			t.Errorf("%s: answers %v, want an error", name, errnos)
		}
	}
	if errnos, _ := exchange(t, f, []netlink.Message{batch(get)[0]}); len(errnos) != 1 || errnos[0] != unix.EINVAL {
		t.Errorf("a batch without its end: %v, want EINVAL", errnos)
	}
	if _, err := f.Exchange([]byte{100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("Exchange(a message longer than its datagram) = nil error")
	}
}

// TestFaults: FailNext fails one transaction and only one, After runs at
// its call and only once, Commits counts what committed.
func TestFaults(t *testing.T) {
	f := nftfake.New()
	conn := f.Conn()
	defer conn.Close()
	tab := netfilter.Table{Family: "ip", Name: "t"}
	add := func(chain string) error {
		b := &netfilter.Batch{}
		b.AddTable(tab)
		b.AddChain(tab, chain, nil)
		return conn.Apply(b)
	}
	f.FailNext(unix.ENOMEM)
	if err := add("a"); !errors.Is(err, unix.ENOMEM) {
		t.Errorf("the failed commit = %v, want ENOMEM", err)
	}
	ran := 0
	f.After(2, func() { ran++; f.DeleteTable(tab) })
	if err := add("b"); err != nil || ran != 0 {
		t.Fatalf("the commit after = %v (After ran %d times)", err, ran)
	}
	if ok, _ := conn.ChainExists(tab.Proto(), "t", "a"); ok || ran != 1 {
		t.Errorf("chain a exists %v after the failed commit; After ran %d times, want once", ok, ran)
	}
	if ok, _ := conn.TableExists(tab.Proto(), "t"); ok || ran != 1 || f.Commits() != 1 {
		t.Errorf("table exists %v after it vanished; After ran %d times; %d commits, want 1", ok, ran, f.Commits())
	}
	f.FailReads(unix.EPERM)
	if _, err := conn.TableExists(tab.Proto(), "t"); !errors.Is(err, unix.EPERM) {
		t.Errorf("a read refused = %v, want EPERM", err)
	}
}

// TestDump: the rendering of a ruleset holding every kind of thing.
func TestDump(t *testing.T) {
	f := nftfake.New()
	conn := f.Conn()
	defer conn.Close()
	tab := netfilter.Table{Family: "ip6", Name: "t"}
	b := &netfilter.Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "post", &netfilter.Hook{Type: "nat", Num: 4, Prio: 100})
	b.AddChain(tab, "odd", &netfilter.Hook{Type: "filter", Num: 9, Prio: -5})
	b.AddChain(tab, "c", nil)
	b.AddSet(tab, netfilter.SetSpec{Name: "ports", KeyType: 13, KeyLen: 2})
	b.AddSetElem(tab, "ports", netfilter.Elem{Key: []byte{0, 80}, Comment: "web"}, true)
	b.AddSet(tab, netfilter.SetSpec{Name: "vm", KeyType: 13, KeyLen: 2, Verdict: true})
	b.AddElem(tab, "vm", []byte{0, 22}, "c")
	id := b.AddAnonSet(tab, netfilter.AnonSet{KeyType: 13, KeyLen: 2, Interval: true, Elems: []netfilter.SetElem{{Key: []byte{0, 1}}, {Key: []byte{0, 9}, End: true}}})
	b.AddRule(tab, "post", []expr.Any{
		&expr.Lookup{SourceRegister: 1, SetName: netfilter.AnonSetName, SetID: id},
		&expr.Verdict{Kind: expr.VerdictGoto, Chain: "c"},
	}, "to c")
	b.AddRule(tab, "c", []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}, "")
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/dump.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Dump(); got != string(want) {
		t.Errorf("Dump() =\n%s\nwant\n%s", got, want)
	}
}

// A refused transaction changes nothing, not even a base chain's policy
// that one of its messages set before another was refused.
func TestRefusedBatchKeepsPolicy(t *testing.T) {
	f := nftfake.New()
	conn := f.Conn()
	defer conn.Close()
	tab := netfilter.Table{Family: "ip", Name: "t"}
	b := &netfilter.Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "in", &netfilter.Hook{Type: "filter", Num: 1})
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	drop := chainMsg(netlink.Create, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_NAME, "in")
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(n *netlink.AttributeEncoder) error {
			n.Uint32(unix.NFTA_HOOK_HOOKNUM, 1)
			n.Uint32(unix.NFTA_HOOK_PRIORITY, 0)
			return nil
		})
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 0)
		ae.String(unix.NFTA_CHAIN_TYPE, "filter")
	})
	refused := tableMsg(unix.NFT_MSG_DELTABLE, unix.NFPROTO_IPV4, "missing")
	if errnos, _ := exchange(t, f, batch(drop, refused)); len(errnos) != 1 || errnos[0] != unix.ENOENT {
		t.Fatalf("answers %v, want ENOENT for the second message", errnos)
	}
	if d := f.Dump(); !strings.Contains(d, "policy accept") {
		t.Errorf("the refused transaction changed the policy:\n%s", d)
	}
	if errnos, _ := exchange(t, f, batch(drop)); len(errnos) != 1 || errnos[0] != 0 {
		t.Fatalf("answers %v, want the ack", errnos)
	}
	if d := f.Dump(); !strings.Contains(d, "policy drop") {
		t.Errorf("the policy update did not apply:\n%s", d)
	}
}
