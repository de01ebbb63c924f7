package firewall

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// The expressions below are the kernel form of the rule texts, built the
// way nft 1.0 linearizes them (same registers, same trimmed payload loads),
// so that `nft list ruleset` prints our netlink-written rules exactly like
// the text the golden files hold. A rule whose text cannot be built here
// (user conditions, spoof checks) has no expressions, and the call that
// writes it goes through `nft -f -` instead.

// Registers as nft numbers them: NFT_REG_1 and NFT_REG_2 (16 bytes each)
// and the 32-bit registers holding the later fields of a concatenation.
const (
	regVerdict = 0
	reg1       = 1
	reg2       = 2
	reg32x01   = 9  // NFT_REG32_01
	reg32x02   = 10 // NFT_REG32_02
	reg32x05   = 13 // NFT_REG32_05
)

// nft datatypes (nftables' datatype.h) of map key fields.
var nftKeyTypes = map[string]struct {
	v4, v6 uint32 // type number per family
	size   uint32 // bytes, before padding to a register
}{
	"addr":    {7, 8, 0},
	"proto":   {12, 12, 1},
	"service": {13, 13, 2},
	"ifname":  {41, 41, 16},
}

// nftMap is a verdict map; fields name the datatypes of its key.
type nftMap struct {
	name   string
	fields []string
}

// nftMaps are the maps of our tables, by name.
var nftMaps = map[string]nftMap{
	"sources":      {"sources", []string{"addr"}},
	"ports":        {"ports", []string{"proto", "service"}},
	"hostip_ports": {"hostip_ports", []string{"addr", "proto", "service"}},
	"hairpins":     {"hairpins", []string{"addr", "proto", "service"}},
	"ifaces":       {"ifaces", []string{"ifname"}},
}

var nftTypeNames = map[string][2]string{
	"addr": {"ipv4_addr", "ipv6_addr"}, "proto": {"inet_proto", "inet_proto"},
	"service": {"inet_service", "inet_service"}, "ifname": {"ifname", "ifname"},
}

func fieldSize(t nftTable, f string) uint32 {
	if f == "addr" {
		if t.family == "ip6" {
			return 16
		}
		return 4
	}
	return nftKeyTypes[f].size
}

// text is the map's type as nft writes it.
func (m nftMap) text(t nftTable) string {
	var names []string
	for _, f := range m.fields {
		i := 0
		if t.family == "ip6" {
			i = 1
		}
		names = append(names, nftTypeNames[f][i])
	}
	return strings.Join(names, " . ")
}

// keyType is the datatype number of the key: 6 bits per concatenated field.
func (m nftMap) keyType(t nftTable) uint32 {
	var id uint32
	for _, f := range m.fields {
		kt := nftKeyTypes[f].v4
		if t.family == "ip6" {
			kt = nftKeyTypes[f].v6
		}
		id = id<<6 | kt
	}
	return id
}

// keyLen is the key size; each field of a concatenation fills whole
// 32-bit registers.
func (m nftMap) keyLen(t nftTable) uint32 {
	if len(m.fields) == 1 {
		return fieldSize(t, m.fields[0])
	}
	var n uint32
	for _, f := range m.fields {
		n += (fieldSize(t, f) + 3) &^ 3
	}
	return n
}

var protoNumbers = map[string]byte{"tcp": 6, "udp": 17, "sctp": 132}

// nftElemKey encodes an element key written as text ("10.0.0.2 . tcp . 80").
func nftElemKey(t nftTable, el nftElem) ([]byte, error) {
	m, ok := nftMaps[el.set]
	if !ok {
		return nil, fmt.Errorf("unknown map %q", el.set)
	}
	parts := strings.Split(el.key, " . ")
	if len(parts) != len(m.fields) {
		return nil, fmt.Errorf("map %s: key %q does not have %d fields", el.set, el.key, len(m.fields))
	}
	var key []byte
	for i, f := range m.fields {
		b, err := fieldBytes(t, f, parts[i])
		if err != nil {
			return nil, fmt.Errorf("map %s: key %q: %w", el.set, el.key, err)
		}
		if len(m.fields) > 1 {
			b = append(b, make([]byte, (4-len(b)%4)%4)...)
		}
		key = append(key, b...)
	}
	return key, nil
}

func fieldBytes(t nftTable, f, s string) ([]byte, error) {
	switch f {
	case "addr":
		ip := net.ParseIP(s)
		if ip == nil || (t.family == "ip") != isV4(ip) {
			return nil, fmt.Errorf("%q is not an address of family %s", s, t.family)
		}
		return famIP(t.family == "ip", ip), nil
	case "proto":
		p, ok := protoNumbers[s]
		if !ok {
			return nil, fmt.Errorf("unknown protocol %q", s)
		}
		return []byte{p}, nil
	case "service":
		port, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", s, err)
		}
		return binary.BigEndian.AppendUint16(nil, uint16(port)), nil
	}
	name := strings.Trim(s, `"`)
	if len(name) >= 16 {
		return nil, fmt.Errorf("interface name %q too long", name)
	}
	return append([]byte(name), make([]byte, 16-len(name))...), nil
}

func famIP(v4 bool, ip net.IP) []byte {
	if v4 {
		return ip.To4()
	}
	return ip.To16()
}

func addrLen(v4 bool) uint32 {
	if v4 {
		return 4
	}
	return 16
}

// Network header offsets of the addresses.
func saddrOff(v4 bool) uint32 {
	if v4 {
		return 12
	}
	return 8
}

func daddrOff(v4 bool) uint32 {
	if v4 {
		return 16
	}
	return 24
}

func loadNH(off, n uint32, reg uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n}
}

// exprAddr matches the address at off against n (an address or prefix):
// "ip saddr 10.0.0.0/16", "ip daddr != 224.0.0.0/4". A prefix on a byte
// boundary loads only its bytes; any other is masked. nil when n is /0.
func exprAddr(v4 bool, off uint32, n *net.IPNet, op expr.CmpOp) []expr.Any {
	ones, bits := n.Mask.Size()
	ip := famIP(v4, n.IP.Mask(n.Mask))
	if ones == 0 || ip == nil {
		return nil
	}
	if ones%8 == 0 {
		l := uint32(ones / 8)
		return []expr.Any{loadNH(off, l, reg1), &expr.Cmp{Op: op, Register: reg1, Data: ip[:l]}}
	}
	full := uint32(bits / 8)
	return []expr.Any{
		loadNH(off, full, reg1),
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: full, Mask: []byte(n.Mask), Xor: make([]byte, full)},
		&expr.Cmp{Op: op, Register: reg1, Data: ip},
	}
}

// exprL4Proto: meta l4proto <proto>
func exprL4Proto(proto string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{protoNumbers[proto]}},
	}
}

// exprDport: <proto> dport <port>
func exprDport(proto string, port int) []expr.Any {
	return append(exprL4Proto(proto),
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binary.BigEndian.AppendUint16(nil, uint16(port))})
}

// exprDNAT: dnat to <ip>:<port>
func exprDNAT(v4 bool, ip net.IP, port int) []expr.Any {
	family := uint32(10) // NFPROTO_IPV6
	if v4 {
		family = 2 // NFPROTO_IPV4
	}
	return []expr.Any{
		&expr.Immediate{Register: reg1, Data: famIP(v4, ip)},
		&expr.Immediate{Register: reg2, Data: binary.BigEndian.AppendUint16(nil, uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: family, RegAddrMin: reg1, RegProtoMin: reg2, Specified: true},
	}
}

// exprVmap: <key loads> vmap @<set>; loads put the key into reg1 onwards.
func exprVmap(set string, loads ...expr.Any) []expr.Any {
	return append(loads, &expr.Lookup{SourceRegister: reg1, SetName: set, IsDestRegSet: true, DestRegister: regVerdict})
}

// exprConcatKey loads "<ip> daddr . meta l4proto . th dport" into reg1
// onwards (without the address when withAddr is false), as nft does.
func exprConcatKey(v4, withAddr bool) []expr.Any {
	protoReg, portReg := uint32(reg1), uint32(reg32x01)
	var out []expr.Any
	if withAddr {
		l := uint32(16)
		protoReg, portReg = reg2, reg32x05
		if v4 {
			l, protoReg, portReg = 4, reg32x01, reg32x02
		}
		out = append(out, loadNH(daddrOff(v4), l, reg1))
	}
	return append(out,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: protoReg},
		&expr.Payload{DestRegister: portReg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
}

// hostReg is a native-endian 32-bit value, as the kernel stores fib
// results and ct status in a register.
func hostReg(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// concat joins expression lists; nil when any part is nil (not buildable).
func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		if p == nil {
			return nil
		}
		out = append(out, p...)
	}
	return out
}
