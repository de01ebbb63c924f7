package nftrule

import (
	"net"
	"reflect"
	"testing"

	"github.com/google/nftables/expr"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestParts: each part's nft text and kernel expressions, side by side,
// without root (TestNetlinkMatchesScript in package nftables proves the
// kernel lists the expressions as nft writes the text).
func TestParts(t *testing.T) {
	cmp := func(op expr.CmpOp, data ...byte) expr.Any { return &expr.Cmp{Op: op, Register: Reg1, Data: data} }
	nh := func(off, n uint32) expr.Any { return LoadNH(off, n, Reg1) }
	ifname := func(s string) []byte { b := make([]byte, 16); copy(b, s); return b }
	tests := []struct {
		name  string
		part  Part
		text  string
		exprs []expr.Any
	}{
		{"address", Addr(true, "saddr", net.ParseIP("10.88.0.2"), false), "ip saddr 10.88.0.2",
			[]expr.Any{nh(12, 4), cmp(expr.CmpOpEq, 10, 88, 0, 2)}},
		{"prefix on a byte", Prefix(true, "daddr", mustCIDR(t, "10.88.0.0/16"), true), "ip daddr != 10.88.0.0/16",
			[]expr.Any{nh(16, 2), cmp(expr.CmpOpNeq, 10, 88)}},
		{"prefix inside a byte", Prefix(true, "daddr", mustCIDR(t, "224.0.0.0/4"), true), "ip daddr != 224.0.0.0/4",
			[]expr.Any{nh(16, 4), &expr.Bitwise{SourceRegister: Reg1, DestRegister: Reg1, Len: 4, Mask: []byte{0xf0, 0, 0, 0}, Xor: make([]byte, 4)}, cmp(expr.CmpOpNeq, 224, 0, 0, 0)}},
		{"IPv6 address", Addr(false, "daddr", net.ParseIP("2001:db8::10"), false), "ip6 daddr 2001:db8::10",
			[]expr.Any{nh(24, 16), cmp(expr.CmpOpEq, net.ParseIP("2001:db8::10")...)}},
		{"l4 protocol", L4Proto("udp"), "meta l4proto udp",
			[]expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: Reg1}, cmp(expr.CmpOpEq, 17)}},
		{"destination port", Dport("tcp", 8080), "tcp dport 8080",
			[]expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: Reg1}, cmp(expr.CmpOpEq, 6),
				&expr.Payload{DestRegister: Reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}, cmp(expr.CmpOpEq, 0x1f, 0x90)}},
		{"interface", IfName(true, "cni0", false), `iifname "cni0"`,
			[]expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: Reg1}, cmp(expr.CmpOpEq, ifname("cni0")...)}},
		{"not the interface", IfName(false, "cni0", true), `oifname != "cni0"`,
			[]expr.Any{&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: Reg1}, cmp(expr.CmpOpNeq, ifname("cni0")...)}},
		{"ether source", EtherSaddr(net.HardwareAddr{2, 0, 0, 0, 0, 1}, true), "ether saddr != 02:00:00:00:00:01",
			[]expr.Any{loadLink(6, 6), cmp(expr.CmpOpNeq, 2, 0, 0, 0, 0, 1)}},
		{"ether type", EtherType("arp"), "ether type arp", []expr.Any{loadLink(12, 2), cmp(expr.CmpOpEq, 8, 6)}},
		{"verdict map", VmapOf("oifname", "icc_to", &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: Reg1}), "oifname vmap @icc_to",
			[]expr.Any{&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: Reg1}, &expr.Lookup{SourceRegister: Reg1, SetName: "icc_to", IsDestRegSet: true, DestRegister: RegVerdict}}},
		{"not in a set", NotIn("ip saddr", Set{"ipv4_addr", []string{"10.0.0.3", "10.0.0.2"}}, nh(12, 4)), "ip saddr != { 10.0.0.2, 10.0.0.3 }",
			[]expr.Any{nh(12, 4), &expr.Lookup{SourceRegister: Reg1, SetID: 0, Invert: true}}},
		{"dnat", DNATTo(false, net.ParseIP("fd00::2"), 80), "dnat to [fd00::2]:80", []expr.Any{
			&expr.Immediate{Register: Reg1, Data: net.ParseIP("fd00::2")}, &expr.Immediate{Register: Reg2, Data: []byte{0, 80}},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: 10, RegAddrMin: Reg1, RegProtoMin: Reg2, Specified: true}}},
		{"jump", Jump("if-1"), "jump if-1", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: "if-1"}}},
		{"drop", Drop, "drop", []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}},
		{"masquerade", Masquerade, "masquerade", []expr.Any{&expr.Masq{}}},
		{"ct state", Ct("state", "established,related", 0x6), "ct state established,related", []expr.Any{
			&expr.Ct{Register: Reg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: Reg1, DestRegister: Reg1, Len: 4, Mask: hostReg(6), Xor: hostReg(0)}, cmp(expr.CmpOpNeq, hostReg(0)...)}},
		{"fib", FibLocal(), "fib daddr type local", []expr.Any{
			&expr.Fib{Register: Reg1, FlagDADDR: true, ResultADDRTYPE: true}, cmp(expr.CmpOpEq, hostReg(2)...)}},
		{"accept", Accept, "accept", []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}},
		{"user conditions", Words([]string{"ip", "saddr", "!=", "192.0.2.0/24"}), "ip saddr != 192.0.2.0/24", nil},
	}
	for _, tc := range tests {
		text, exprs, _ := tc.part.render(0)
		if text != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, text, tc.text)
		}
		if !reflect.DeepEqual(exprs, tc.exprs) {
			t.Errorf("%s: expressions\n%#v\nwant\n%#v", tc.name, exprs, tc.exprs)
		}
	}
}

// TestBuild: a rule's text joins its parts', its expressions and sets
// follow them (a second set is the rule's set 1), and a part without a
// kernel form leaves the rule none.
func TestBuild(t *testing.T) {
	a := Set{"ipv4_addr", []string{"10.0.0.2", "10.0.0.3"}}
	b := Set{"ifname", []string{"br0", "eth0"}}
	r := Build(NotIn("ip saddr", a, LoadNH(12, 4, Reg1)), NotIn("oifname", b), Drop)
	if r.Text != `ip saddr != { 10.0.0.2, 10.0.0.3 } oifname != { "br0", "eth0" } drop` || len(r.Sets) != 2 {
		t.Errorf("Build = %q with %d sets", r.Text, len(r.Sets))
	}
	if l, ok := r.Exprs[2].(*expr.Lookup); !ok || l.SetID != 1 {
		t.Errorf("the second lookup = %#v, want set 1 of the rule", r.Exprs[2])
	}
	if r := Build(Words([]string{"iifname", "eth0"}), Drop); r.Exprs != nil || r.Text != "iifname eth0 drop" {
		t.Errorf("Build(user conditions) = %q, %v; want the text and no kernel form", r.Text, r.Exprs)
	}
	if r := Build(Words(nil), Masquerade); r.Text != "masquerade" || len(r.Exprs) != 1 {
		t.Errorf("Build(no conditions) = %q, %v", r.Text, r.Exprs)
	}
}
