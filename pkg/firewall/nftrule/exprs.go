package nftrule

import (
	"net"

	"github.com/google/nftables/expr"
)

// The expressions built here and in the layers above are the kernel form of
// the rule texts, built the way nft 1.0 linearizes them (same registers,
// same trimmed payload loads), so that `nft list ruleset` prints our
// netlink-written rules exactly like the text the golden files hold. A rule
// whose text cannot be built (user conditions) has no expressions, and the
// call that writes it goes through `nft -f -` instead.

// ProtoNumbers are the IP protocol numbers of the mappings' protocols.
var ProtoNumbers = map[string]byte{"tcp": 6, "udp": 17, "sctp": 132}

// Registers as nft numbers them: the verdict register, NFT_REG_1 and
// NFT_REG_2 (16 bytes each).
const (
	RegVerdict = 0
	Reg1       = 1
	Reg2       = 2
)

// famIP returns ip in the length of its family.
func famIP(v4 bool, ip net.IP) []byte {
	if v4 {
		return ip.To4()
	}
	return ip.To16()
}

// AddrLen is the length of an address of the family.
func AddrLen(v4 bool) uint32 {
	if v4 {
		return 4
	}
	return 16
}

// saddrOff is the network header offset of the source address.
func saddrOff(v4 bool) uint32 {
	if v4 {
		return 12
	}
	return 8
}

// DaddrOff is the network header offset of the destination address.
func DaddrOff(v4 bool) uint32 {
	if v4 {
		return 16
	}
	return 24
}

// LoadNH loads n bytes of the network header at off into reg.
func LoadNH(off, n uint32, reg uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n}
}

// matchAddr matches the address at off against n (an address or prefix):
// "ip saddr 10.0.0.0/16", "ip daddr != 224.0.0.0/4". A prefix on a byte
// boundary loads only its bytes; any other is masked. nil when n is /0.
func matchAddr(v4 bool, off uint32, n *net.IPNet, op expr.CmpOp) []expr.Any {
	ones, bits := n.Mask.Size()
	ip := famIP(v4, n.IP.Mask(n.Mask))
	if ones == 0 || ip == nil {
		return nil
	}
	if ones%8 == 0 {
		l := uint32(ones / 8)
		return []expr.Any{LoadNH(off, l, Reg1), &expr.Cmp{Op: op, Register: Reg1, Data: ip[:l]}}
	}
	full := uint32(bits / 8)
	return []expr.Any{
		LoadNH(off, full, Reg1),
		&expr.Bitwise{SourceRegister: Reg1, DestRegister: Reg1, Len: full, Mask: []byte(n.Mask), Xor: make([]byte, full)},
		&expr.Cmp{Op: op, Register: Reg1, Data: ip},
	}
}

// vmap is "<key loads> vmap @<set>"; loads put the key into Reg1 onwards.
func vmap(set string, loads ...expr.Any) []expr.Any {
	return append(loads, &expr.Lookup{SourceRegister: Reg1, SetName: set, IsDestRegSet: true, DestRegister: RegVerdict})
}
