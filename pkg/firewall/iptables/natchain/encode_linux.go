package natchain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ErrUnsupported reports a rule spec outside the shapes this package
// encodes.
var ErrUnsupported = errors.New("rule spec not encodable over netlink")

// Encoded is a rule as iptables-nft writes it.
type Encoded struct {
	Exprs []expr.Any
	// Proto is the "-p" protocol number (0 for none): the compat
	// attribute of the rule message.
	Proto uint32
	// Comment and Jump are the "-m comment" text and the chain a "-j"
	// jumps to ("" for a built-in target), as netfilter.Rule reads them.
	Comment, Jump string
	// Source is what "-s" compares (the prefix's bytes as the rule
	// compares them), or nil.
	Source []byte
}

// spec is a parsed rule: the parts iptables-nft encodes before the
// matches, then the matches and the target in the order given.
type spec struct {
	v4       bool
	proto    uint8
	src, dst *net.IPNet
	matches  []expr.Any
	comment  string
	target   []expr.Any
	jump     string
}

// Encode encodes a rule spec (the arguments after "-A <chain>") of the IPv4
// or the IPv6 family.
// Equivalent to: iptables -A <chain> <args…> (or ip6tables)
func Encode(args []string, v4 bool) (Encoded, error) {
	s := &spec{v4: v4}
	for i := 0; i < len(args); {
		n, err := s.option(args[i:])
		if err != nil {
			return Encoded{}, fmt.Errorf("%w: %q: %w", ErrUnsupported, strings.Join(args, " "), err)
		}
		i += n
	}
	if s.target == nil {
		return Encoded{}, fmt.Errorf("%w: %q: no target", ErrUnsupported, strings.Join(args, " "))
	}
	return s.rule(), nil
}

// rule assembles the expressions in iptables-nft's order.
func (s *spec) rule() Encoded {
	r := Encoded{Proto: uint32(s.proto), Comment: s.comment, Jump: s.jump}
	if s.proto != 0 {
		r.Exprs = append(r.Exprs,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{s.proto}})
	}
	srcOff, dstOff := uint32(8), uint32(24)
	if s.v4 {
		srcOff, dstOff = 12, 16
	}
	if s.src != nil {
		var src []expr.Any
		src, r.Source = addr(s.src, srcOff)
		r.Exprs = append(r.Exprs, src...)
	}
	if s.dst != nil {
		dst, _ := addr(s.dst, dstOff)
		r.Exprs = append(r.Exprs, dst...)
	}
	r.Exprs = append(r.Exprs, s.matches...)
	r.Exprs = append(r.Exprs, &expr.Counter{})
	r.Exprs = append(r.Exprs, s.target...)
	return r
}

// addr compares a network-header address with a prefix: its whole bytes
// alone, or the whole address masked when the prefix ends inside a byte;
// nothing for /0. It returns the compared bytes too.
func addr(n *net.IPNet, off uint32) ([]expr.Any, []byte) {
	ones, bits := n.Mask.Size()
	ip := n.IP.Mask(n.Mask)
	if bits == 32 {
		ip = ip.To4()
	}
	if ones == 0 {
		return nil, nil // iptables writes no comparison for a /0
	}
	if ones%8 == 0 {
		data := []byte(ip[:ones/8])
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(ones / 8)},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data},
		}, data
	}
	l := uint32(bits / 8)
	data := []byte(ip)
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: l, Mask: []byte(n.Mask), Xor: make([]byte, l)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data},
	}, data
}

// option consumes one option with its values and returns how many
// arguments it took.
func (s *spec) option(args []string) (int, error) {
	if s.target != nil {
		return 0, fmt.Errorf("%q after the target", args[0])
	}
	if len(args) < 2 {
		return 0, fmt.Errorf("%q without a value", args[0])
	}
	switch args[0] {
	case "-s", "-d":
		return 2, s.address(args[0], args[1])
	case "-p":
		return 2, s.protocol(args[1])
	case "-m":
		return s.match(args)
	case "-j":
		return s.targetOf(args)
	}
	return 0, fmt.Errorf("option %q", args[0])
}

func (s *spec) address(opt, val string) error {
	_, n, err := net.ParseCIDR(val)
	if err != nil || (n.IP.To4() != nil) != s.v4 {
		return fmt.Errorf("%s %q: not a prefix of the family", opt, val)
	}
	if opt == "-s" && s.src == nil {
		s.src = n
		return nil
	}
	if opt == "-d" && s.dst == nil {
		s.dst = n
		return nil
	}
	return fmt.Errorf("%s given twice", opt)
}

var protocols = map[string]uint8{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP, "sctp": unix.IPPROTO_SCTP}

func (s *spec) protocol(name string) error {
	p, ok := protocols[name]
	if !ok || s.proto != 0 || len(s.matches) > 0 {
		return fmt.Errorf("-p %q", name)
	}
	s.proto = p
	return nil
}

// native returns the byte order of the host, in which the kernel keeps
// marks and the xt info structures.
func native() binary.ByteOrder { return binary.NativeEndian }

// mask parses "value/mask" as iptables does (any base strconv accepts).
func mask(val string) (v, m uint32, err error) {
	a, b, ok := strings.Cut(val, "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want value/mask", val)
	}
	x, err1 := strconv.ParseUint(a, 0, 32)
	y, err2 := strconv.ParseUint(b, 0, 32)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("%q: %w", val, err)
	}
	return uint32(x), uint32(y), nil
}
