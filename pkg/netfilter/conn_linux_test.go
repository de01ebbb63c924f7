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
	defer conn.Close()
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
	defer conn.Close()
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
