package nftrule

import (
	"strings"

	"github.com/google/nftables/expr"
)

// Key is a concatenation of packet fields a rule looks up in a named set
// or map ("ip daddr . meta l4proto . th dport"), loaded the way nft does:
// the first field into Reg1, each next one into the register after the
// previous field's, every field filling whole 32-bit registers.
type Key struct {
	text  string
	loads []expr.Any
}

// Fields of a Key.
const (
	FieldSaddr   = "saddr"
	FieldDaddr   = "daddr"
	FieldL4Proto = "l4proto"
	FieldDport   = "dport"
)

// ConcatKey returns the key made of fields, for a table of the family.
// In an interval set, nft converts the protocol's byte to network order
// (a no-op on one byte, but an expression of the rule all the same).
func ConcatKey(v4, interval bool, fields ...string) Key {
	ip := "ip6"
	if v4 {
		ip = "ip"
	}
	var words []string
	var loads []expr.Any
	off := uint32(0)
	for _, f := range fields {
		reg := regAt(off)
		switch f {
		case FieldSaddr, FieldDaddr:
			at := saddrOff(v4)
			if f == FieldDaddr {
				at = DaddrOff(v4)
			}
			words = append(words, ip+" "+f)
			loads = append(loads, LoadNH(at, AddrLen(v4), reg))
			off += AddrLen(v4)
		case FieldL4Proto:
			words = append(words, "meta l4proto")
			loads = append(loads, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg})
			if interval {
				loads = append(loads, &expr.Byteorder{SourceRegister: reg, DestRegister: reg, Op: expr.ByteorderHton, Len: 1, Size: 2})
			}
			off += 4
		case FieldDport:
			words = append(words, "th dport")
			loads = append(loads, &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
			off += 4
		}
	}
	return Key{text: strings.Join(words, " . "), loads: loads}
}

// regAt is the register nft names for a byte offset into the registers:
// a 16-byte register where one starts (NFT_REG_1 …), else a 32-bit one
// (NFT_REG32_00 is 8).
func regAt(off uint32) uint32 {
	if off%16 == 0 {
		return off/16 + Reg1
	}
	return 8 + off/4
}

// VmapKey is "<key> vmap @<set>".
func VmapKey(k Key, set string) Part { return VmapOf(k.text, set, clone(k.loads)...) }

// InNamed matches a key held in a named set: "ip saddr @masq".
func InNamed(k Key, set string) Part {
	return part{k.text + " @" + set, append(clone(k.loads), &expr.Lookup{SourceRegister: Reg1, SetName: set})}
}

// NATMap translates to the value the key maps to in a named data map:
// "dnat ip to meta l4proto . th dport map @port_dnat" (an address and a
// port, withPort) or "snat ip to ip saddr map @snat_to" (an address).
func NATMap(dnat, v4 bool, k Key, set string, withPort bool) Part {
	word, typ := "snat", expr.NATTypeSourceNAT
	if dnat {
		word, typ = "dnat", expr.NATTypeDestNAT
	}
	fam := "ip6"
	if v4 {
		fam = "ip"
	}
	nat := &expr.NAT{Type: typ, Family: nfproto(v4), RegAddrMin: Reg1, RegAddrMax: Reg1}
	if withPort {
		reg := regAt(AddrLen(v4))
		nat.RegProtoMin, nat.RegProtoMax, nat.Specified = reg, reg, true
	}
	return part{word + " " + fam + " to " + k.text + " map @" + set, append(clone(k.loads),
		&expr.Lookup{SourceRegister: Reg1, SetName: set, IsDestRegSet: true, DestRegister: Reg1}, nat)}
}

func clone(e []expr.Any) []expr.Any { return append([]expr.Any{}, e...) }

// Continue does nothing ("continue"): the rule of a ledger chain, which
// only records an element in its comment.
var Continue Part = part{"continue", []expr.Any{&expr.Verdict{Kind: expr.VerdictContinue}}}

// Return leaves the chain: "return".
var Return Part = part{"return", []expr.Any{&expr.Verdict{Kind: expr.VerdictReturn}}}
