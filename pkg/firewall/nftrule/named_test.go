package nftrule

import (
	"reflect"
	"testing"

	"github.com/google/nftables/expr"
)

// TestNamedParts: the parts that look keys up in our named sets and maps,
// as nft writes them, and where their keys' fields are loaded: a
// concatenation fills 32-bit registers one after the other (NFT_REG32_00
// is 8), from the start of a 16-byte one (NFT_REG_1).
func TestNamedParts(t *testing.T) {
	hostKey := ConcatKey(true, false, FieldDaddr, FieldL4Proto, FieldDport)
	for _, tc := range []struct {
		name string
		part Part
		text string
	}{
		{"vmap", VmapKey(ConcatKey(true, false, FieldL4Proto, FieldDport), "ports"), "meta l4proto . th dport vmap @ports"},
		{"in a set", InNamed(ConcatKey(false, true, FieldSaddr, FieldDaddr), "masq_nets"), "ip6 saddr . ip6 daddr @masq_nets"},
		{"dnat map", NATMap(true, true, hostKey, "hostip_dnat", true), "dnat ip to ip daddr . meta l4proto . th dport map @hostip_dnat"},
		{"snat map", NATMap(false, false, ConcatKey(false, false, FieldSaddr), "snat_to", false), "snat ip6 to ip6 saddr map @snat_to"},
		{"port range", DportRange("udp", 5000, 5009), "udp dport 5000-5009"},
		{"dnat to an address", DNATAddr(false, []byte{0xfd, 0, 15: 2}), "dnat to fd00::2"},
	} {
		if got := Build(tc.part).Text; got != tc.text {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.text)
		}
	}
	want := []expr.Any{
		LoadNH(16, 4, Reg1),
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
		&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: Reg1, SetName: "hostip_dnat", IsDestRegSet: true, DestRegister: Reg1},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: 2, RegAddrMin: Reg1, RegAddrMax: Reg1, RegProtoMin: 9, RegProtoMax: 9, Specified: true},
	}
	if got := Build(NATMap(true, true, hostKey, "hostip_dnat", true)).Exprs; !reflect.DeepEqual(got, want) {
		t.Errorf("dnat map expressions:\n%#v\nwant\n%#v", got, want)
	}
}
