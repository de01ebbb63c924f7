package nftrule

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// Part is one match or statement of a rule, described once: its nft text
// and its kernel expressions both derive from its fields. A rule is a list
// of parts ending in its verdict (Build).
type Part interface {
	// render returns the part's nft text, its expressions (nil when only
	// nft builds it) and the anonymous sets it adds, the first of which
	// is set number first of the rule.
	render(first int) (text string, exprs []expr.Any, sets []Set)
}

// Rule is a rule as its parts render it: its nft text, its kernel
// expressions (nil when only nft builds it) and the anonymous sets they
// look up (Lookup(i, …) stands for Sets[i]).
type Rule struct {
	Text  string
	Exprs []expr.Any
	Sets  []Set
}

// Build returns the rule made of parts: their texts joined, their
// expressions concatenated, and no kernel form when a part has none
// (user conditions).
func Build(parts ...Part) Rule {
	r := Rule{Exprs: []expr.Any{}}
	var words []string
	for _, p := range parts {
		text, exprs, sets := p.render(len(r.Sets))
		if text != "" {
			words = append(words, text)
		}
		if exprs == nil {
			r.Exprs = nil
		} else if r.Exprs != nil {
			r.Exprs = append(r.Exprs, exprs...)
		}
		r.Sets = append(r.Sets, sets...)
	}
	r.Text = strings.Join(words, " ")
	if r.Exprs == nil {
		r.Sets = nil
	}
	return r
}

// part is a Part whose rendering takes no set.
type part struct {
	text  string
	exprs []expr.Any
}

func (p part) render(int) (string, []expr.Any, []Set) { return p.text, p.exprs, nil }

func neq(neg bool) (string, expr.CmpOp) {
	if neg {
		return "!= ", expr.CmpOpNeq
	}
	return "", expr.CmpOpEq
}

// Addr matches the source ("saddr") or destination ("daddr") address of
// the family against one address: "ip saddr 10.88.0.2".
func Addr(v4 bool, field string, ip net.IP, neg bool) Part {
	bits := 128
	if v4 {
		bits = 32
	}
	return addrPart(v4, field, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, ip.String(), neg)
}

// Prefix matches the source or destination address against a prefix,
// written as one whatever its length: "ip6 daddr != fd00::/64".
func Prefix(v4 bool, field string, n *net.IPNet, neg bool) Part {
	return addrPart(v4, field, n, n.String(), neg)
}

func addrPart(v4 bool, field string, n *net.IPNet, val string, neg bool) Part {
	word, off := "ip6", saddrOff(v4)
	if v4 {
		word = "ip"
	}
	if field == "daddr" {
		off = DaddrOff(v4)
	}
	op, cmp := neq(neg)
	return part{word + " " + field + " " + op + val, matchAddr(v4, off, n, cmp)}
}

// L4Proto matches the layer-4 protocol: "meta l4proto tcp".
func L4Proto(proto string) Part {
	return part{"meta l4proto " + proto, []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: Reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: Reg1, Data: []byte{ProtoNumbers[proto]}},
	}}
}

// Dport matches the protocol and its destination port: "tcp dport 8080".
func Dport(proto string, port int) Part {
	_, l4, _ := L4Proto(proto).render(0)
	return part{proto + " dport " + strconv.Itoa(port), append(l4,
		&expr.Payload{DestRegister: Reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: Reg1, Data: binary.BigEndian.AppendUint16(nil, uint16(port))})}
}

// DportRange matches a range of destination ports of the protocol:
// `tcp dport 8000-8100`.
func DportRange(proto string, first, last int) Part {
	_, l4, _ := L4Proto(proto).render(0)
	return part{proto + " dport " + strconv.Itoa(first) + "-" + strconv.Itoa(last), append(l4,
		&expr.Payload{DestRegister: Reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpGte, Register: Reg1, Data: binary.BigEndian.AppendUint16(nil, uint16(first))},
		&expr.Cmp{Op: expr.CmpOpLte, Register: Reg1, Data: binary.BigEndian.AppendUint16(nil, uint16(last))})}
}

// IfName matches the input (iif) or output (oif) interface's name:
// `iifname "cni0"`, `oifname != "cni0"`.
func IfName(iif bool, name string, neg bool) Part {
	word, key := "oifname", expr.MetaKeyOIFNAME
	if iif {
		word, key = "iifname", expr.MetaKeyIIFNAME
	}
	data := []byte(name)
	if len(data) < 16 { // as nft linearizes it; validated names are shorter
		data = append(data, make([]byte, 16-len(data))...)
	}
	op, cmp := neq(neg)
	return part{word + " " + op + `"` + name + `"`, []expr.Any{
		&expr.Meta{Key: key, Register: Reg1},
		&expr.Cmp{Op: cmp, Register: Reg1, Data: data},
	}}
}

// VmapOf is "<key> vmap @<set>", the key ("iifname", "ip daddr") loaded by
// loads into Reg1 onwards.
func VmapOf(key, set string, loads ...expr.Any) Part {
	return part{key + " vmap @" + set, vmap(set, loads...)}
}

// Words are free-form nft tokens (user conditions): text only, so the rule
// has no kernel form; none is an empty part.
func Words(tokens []string) Part {
	if len(tokens) == 0 {
		return part{"", []expr.Any{}}
	}
	return part{strings.Join(tokens, " "), nil}
}

// notIn matches a field, loaded by load into Reg1, against a set.
type notIn struct {
	field string
	load  []expr.Any
	set   Set
}

func (p notIn) render(first int) (string, []expr.Any, []Set) {
	m, sets := inSet(p.set, true, first)
	return p.field + " != " + p.set.Text(), append(append([]expr.Any{}, p.load...), m...), sets
}

// NotIn matches a field not in an anonymous set: "ip saddr != { … }",
// `oifname != { "br0", "eth0" }`. load puts the field into Reg1.
func NotIn(field string, set Set, load ...expr.Any) Part { return notIn{field, load, set} }

// Verdicts and statements.
var (
	Drop       Part = part{"drop", []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}}
	Masquerade Part = part{"masquerade", []expr.Any{&expr.Masq{}}}
)

// Jump is "jump <chain>".
func Jump(chain string) Part {
	return part{"jump " + chain, []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: chain}}}
}

// nfproto is the NAT family of an address: NFPROTO_IPV4 or NFPROTO_IPV6.
func nfproto(v4 bool) uint32 {
	if v4 {
		return 2
	}
	return 10
}

// DNATTo is "dnat to <ip>:<port>" ("[ip6]:port").
func DNATTo(v4 bool, ip net.IP, port int) Part {
	return part{"dnat to " + net.JoinHostPort(ip.String(), strconv.Itoa(port)), []expr.Any{
		&expr.Immediate{Register: Reg1, Data: famIP(v4, ip)},
		&expr.Immediate{Register: Reg2, Data: binary.BigEndian.AppendUint16(nil, uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: nfproto(v4), RegAddrMin: Reg1, RegProtoMin: Reg2, Specified: true},
	}}
}

// DNATAddr is "dnat to <ip>": the destination port stays as it is.
func DNATAddr(v4 bool, ip net.IP) Part {
	return part{"dnat to " + ip.String(), []expr.Any{
		&expr.Immediate{Register: Reg1, Data: famIP(v4, ip)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: nfproto(v4), RegAddrMin: Reg1},
	}}
}

// EtherSaddr matches the frame's source MAC: "ether saddr != <mac>".
func EtherSaddr(mac net.HardwareAddr, neg bool) Part {
	op, cmp := neq(neg)
	return part{"ether saddr " + op + mac.String(), []expr.Any{
		loadLink(6, 6),
		&expr.Cmp{Op: cmp, Register: Reg1, Data: []byte(mac)},
	}}
}

// etherTypes are the ether types EtherType names.
var etherTypes = map[string]uint16{"ip": 0x0800, "arp": 0x0806, "ip6": 0x86dd}

// EtherType matches the frame's ether type: "ether type ip".
func EtherType(name string) Part {
	t := etherTypes[name]
	return part{"ether type " + name, []expr.Any{
		loadLink(12, 2),
		&expr.Cmp{Op: expr.CmpOpEq, Register: Reg1, Data: binary.BigEndian.AppendUint16(nil, t)},
	}}
}

// loadLink loads n bytes at off of the link-layer header into Reg1.
func loadLink(off, n uint32) expr.Any {
	return &expr.Payload{DestRegister: Reg1, Base: expr.PayloadBaseLLHeader, Offset: off, Len: n}
}

// Accept is the verdict "accept".
var Accept Part = part{"accept", []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}}

// Ct matches conntrack bits: "ct state established,related" (key state),
// "ct status dnat" (key status); names are the bits as nft writes them.
func Ct(key string, names string, bits uint32) Part {
	k := expr.CtKeySTATE
	if key == "status" {
		k = expr.CtKeySTATUS
	}
	return part{"ct " + key + " " + names, []expr.Any{
		&expr.Ct{Register: Reg1, Key: k},
		&expr.Bitwise{SourceRegister: Reg1, DestRegister: Reg1, Len: 4, Mask: hostReg(bits), Xor: hostReg(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: Reg1, Data: hostReg(0)},
	}}
}

// FibLocal matches packets addressed to the node itself: "fib daddr type
// local" (RTN_LOCAL).
func FibLocal() Part {
	return part{"fib daddr type local", []expr.Any{
		&expr.Fib{Register: Reg1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: Reg1, Data: hostReg(2)},
	}}
}

// hostReg is a native-endian 32-bit value, as the kernel keeps ct state
// and status and fib results in a register.
func hostReg(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
