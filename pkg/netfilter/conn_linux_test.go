package netfilter

import (
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/test/sandbox"
)

// A chain name longer than the kernel keeps (a reference spoof-check chain
// named after a 300-byte container ID) names no chain: looking it up says
// so instead of failing with ERANGE, so a DEL of such a container succeeds.
func TestOverlongNamesNameNoChain(t *testing.T) {
	sandbox.Require(t)
	conn, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close) // after the cleanups registered later, which use conn
	long := "cni-br-iface-" + strings.Repeat("c", 300) + "-eth0"
	if ok, err := conn.ChainExists(unix.NFPROTO_BRIDGE, "nat", long); ok || err != nil {
		t.Errorf("ChainExists(300-byte name) = %v, %v; want false, nil", ok, err)
	}
	if rules, err := conn.Rules(unix.NFPROTO_BRIDGE, "nat", long); len(rules) != 0 || err != nil {
		t.Errorf("Rules(300-byte name) = %v, %v; want none", rules, err)
	}
}

// A rule added with echo comes back with its handle, in the chain it went
// to, and can then be read by that handle alone — until it is deleted.
func TestEchoAndRuleByHandle(t *testing.T) {
	sandbox.Require(t)
	conn, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close) // after the cleanups registered later, which use conn
	tab := Table{Family: "ip", Name: "echotest"}
	b := &Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "from", nil)
	b.AddChain(tab, "to", nil)
	b.AddXTRule(tab, "from", []expr.Any{&expr.Counter{}}, 0)
	b.AddXTRuleEcho(tab, "from", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: "to"}}, 0)
	echoed, err := conn.ApplyEcho(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d := &Batch{}
		d.push(unix.NFT_MSG_DELTABLE, 0, tab, encodeAttrs(func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_TABLE_NAME, tab.Name) }))
		_ = conn.Apply(d)
	})
	if len(echoed) != 1 || echoed[0].Chain != "from" || echoed[0].Jump != "to" || echoed[0].Handle == 0 {
		t.Fatalf("echoed = %+v, want the one jump from \"from\" to \"to\" with its handle", echoed)
	}
	r, ok, err := conn.RuleByHandle(unix.NFPROTO_IPV4, tab.Name, "from", echoed[0].Handle)
	if err != nil || !ok || r.Jump != "to" || r.Handle != echoed[0].Handle {
		t.Fatalf("RuleByHandle = %+v, %v, %v; want the jump", r, ok, err)
	}
	if _, ok, err := conn.RuleByHandle(unix.NFPROTO_IPV4, tab.Name, "to", echoed[0].Handle); ok || err != nil {
		t.Errorf("RuleByHandle in the wrong chain = %v, %v; want false, nil", ok, err)
	}
	d := &Batch{}
	d.DelRule(tab, "from", echoed[0].Handle)
	if err := conn.Apply(d); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := conn.RuleByHandle(unix.NFPROTO_IPV4, tab.Name, "from", echoed[0].Handle); ok || err != nil {
		t.Errorf("RuleByHandle after the deletion = %v, %v; want false, nil", ok, err)
	}
}

// ChainUses answers for each chain asked, in order, what ChainUse answers
// for it alone: found or not (a missing chain, a missing table, a name too
// long to exist), and the use count of those found.
func TestChainUsesInOrder(t *testing.T) {
	sandbox.Require(t)
	conn, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close) // after the cleanups registered later, which use conn
	tab := Table{Family: "ip", Name: "usestest"}
	b := &Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "two", nil)
	b.AddChain(tab, "one", nil)
	b.AddChain(tab, "none", nil)
	b.AddXTRule(tab, "two", []expr.Any{&expr.Counter{}}, 0)
	b.AddXTRule(tab, "two", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: "one"}}, 0)
	b.AddXTRule(tab, "one", []expr.Any{&expr.Counter{}}, 0)
	if err := conn.Apply(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d := &Batch{}
		d.push(unix.NFT_MSG_DELTABLE, 0, tab, encodeAttrs(func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_TABLE_NAME, tab.Name) }))
		_ = conn.Apply(d)
	})
	refs := []ChainRef{
		{unix.NFPROTO_IPV4, tab.Name, "missing"},
		{unix.NFPROTO_IPV4, tab.Name, "two"},
		{unix.NFPROTO_IPV4, tab.Name, strings.Repeat("x", 300)},
		{unix.NFPROTO_IPV6, tab.Name, "two"}, // no such table in ip6
		{unix.NFPROTO_IPV4, tab.Name, "none"},
		{unix.NFPROTO_IPV4, tab.Name, "one"},
	}
	found, uses, err := conn.ChainUses(refs)
	if err != nil {
		t.Fatal(err)
	}
	wantFound := []bool{false, true, false, false, true, true}
	for i, r := range refs {
		ok, use, err := conn.ChainUse(r.Family, r.Table, r.Chain)
		if err != nil {
			t.Fatal(err)
		}
		if found[i] != wantFound[i] || found[i] != ok || uses[i] != use {
			t.Errorf("ChainUses for %s: found %v, use %d; ChainUse: %v, %d; want found %v", r.Chain[:min(len(r.Chain), 10)], found[i], uses[i], ok, use, wantFound[i])
		}
	}
	if uses[1] != 2 || uses[5] != 2 || uses[4] != 0 {
		t.Errorf("uses = %v, want two's 2 (its rules), one's 2 (a rule and a jump), none's 0", uses)
	}
}
