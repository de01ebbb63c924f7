package natchain

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// match consumes "-m <name> <options>".
func (s *spec) match(args []string) (int, error) {
	name := args[1]
	opts := args[2:]
	need := func(opt string) (string, error) {
		if len(opts) < 2 || opts[0] != opt {
			return "", fmt.Errorf("-m %s without %s", name, opt)
		}
		return opts[1], nil
	}
	var val string
	var err error
	switch name {
	case "tcp", "udp", "sctp":
		val, err = need("--dport")
		if err == nil {
			err = s.port(name, val)
		}
	case "comment":
		val, err = need("--comment")
		if err == nil {
			err = s.commentOf(val)
		}
	case "addrtype":
		val, err = need("--dst-type")
		if err == nil && val != "LOCAL" {
			err = fmt.Errorf("--dst-type %q", val)
		}
		s.matches = append(s.matches, xtMatch("addrtype", 1, addrtypeLocal()))
	case "mark":
		val, err = need("--mark")
		if err == nil {
			err = s.markMatch(val)
		}
	default:
		err = fmt.Errorf("match %q", name)
	}
	return 4, err
}

// port matches a destination port ("8080") or range ("8000:8100"), as
// iptables-nft 1.8.9 does: natively for tcp and udp (a range with the
// range expression), with the xt sctp match for sctp.
func (s *spec) port(name, val string) error {
	first, last, isRange := strings.Cut(val, ":")
	if !isRange {
		last = first
	}
	p, err := strconv.ParseUint(first, 10, 16)
	q, qerr := strconv.ParseUint(last, 10, 16)
	if err != nil || qerr != nil || p == 0 || q < p || protocols[name] != s.proto {
		return fmt.Errorf("-m %s --dport %q", name, val)
	}
	if name == "sctp" {
		s.matches = append(s.matches, xtMatch("sctp", 0, sctpDport(uint16(p), uint16(q))))
		return nil
	}
	load := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
	if isRange {
		s.matches = append(s.matches, load, &expr.Range{Op: expr.CmpOpEq, Register: 1,
			FromData: []byte{byte(p >> 8), byte(p)}, ToData: []byte{byte(q >> 8), byte(q)}})
		return nil
	}
	s.matches = append(s.matches, load, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(p >> 8), byte(p)}})
	return nil
}

// commentOf adds the xt comment match: its 256-byte, NUL-padded text.
func (s *spec) commentOf(text string) error {
	if len(text) > 255 || s.comment != "" {
		return fmt.Errorf("--comment %q", text)
	}
	s.comment = text
	info := make([]byte, 256)
	copy(info, text)
	s.matches = append(s.matches, xtMatch("comment", 0, info))
	return nil
}

// markMatch is "-m mark --mark value/mask", native: meta mark, bitwise with
// the mask, compare.
func (s *spec) markMatch(val string) error {
	v, m, err := mask(val)
	if err != nil || m == 0 || m == ^uint32(0) || v&^m != 0 {
		return fmt.Errorf("--mark %q", val)
	}
	s.matches = append(s.matches,
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: u32(m), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: u32(v)})
	return nil
}

// targetOf consumes "-j <target> <options>", which must end the rule.
func (s *spec) targetOf(args []string) (int, error) {
	name, opts := args[1], args[2:]
	n := 2 // arguments the target takes
	var err error
	switch name {
	case "RETURN":
		s.target = []expr.Any{&expr.Verdict{Kind: expr.VerdictReturn}}
	case "MASQUERADE":
		s.target = []expr.Any{xtTarget("MASQUERADE", 0, s.masquerade())}
	case "MARK":
		n, err = 4, s.setMark(opts)
	case "DNAT":
		n, err = 4, s.dnat(opts)
	case "SNAT":
		n, err = 4, s.snat(opts)
	default:
		if name == "" || name[0] == '-' || len(name) > 28 {
			return 0, fmt.Errorf("-j %q", name)
		}
		s.jump = name
		s.target = []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: name}}
	}
	if err == nil && len(args) != n {
		err = fmt.Errorf("-j %s with options %q", name, opts)
	}
	return n, err
}

// setMark is "-j MARK --set-xmark value/mask": xt MARK revision 2, whose
// info is struct xt_mark_tginfo2 {mark, mask}.
func (s *spec) setMark(opts []string) error {
	if len(opts) < 2 || opts[0] != "--set-xmark" {
		return fmt.Errorf("-j MARK %q", opts)
	}
	v, m, err := mask(opts[1])
	if err != nil {
		return err
	}
	s.target = []expr.Any{xtTarget("MARK", 2, append(u32(v), u32(m)...))}
	return nil
}

// dnat is "-j DNAT --to-destination addr:port" ([addr]:port for IPv6), or
// the address alone (the port kept, for a range of ports): xt DNAT
// revision 2, whose info is struct nf_nat_range2.
func (s *spec) dnat(opts []string) error {
	if len(opts) < 2 || opts[0] != "--to-destination" {
		return fmt.Errorf("-j DNAT %q", opts)
	}
	if ip := net.ParseIP(opts[1]); ip != nil && (ip.To4() != nil) == s.v4 && s.proto != 0 {
		s.target = []expr.Any{xtTarget("DNAT", 2, natRange2(ip, 0))}
		return nil
	}
	host, port, err := net.SplitHostPort(opts[1])
	ip := net.ParseIP(host)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || ip == nil || (ip.To4() != nil) != s.v4 || perr != nil || p == 0 || s.proto == 0 {
		return fmt.Errorf("--to-destination %q", opts[1])
	}
	s.target = []expr.Any{xtTarget("DNAT", 2, natRange2(ip, uint16(p)))}
	return nil
}

// snat is "-j SNAT --to-source addr" as iptables-restore writes it: for
// IPv4 xt SNAT revision 0, struct nf_nat_ipv4_multi_range_compat with one
// range; for IPv6 revision 1, struct nf_nat_range; the address alone
// (NF_NAT_RANGE_MAP_IPS), no ports.
func (s *spec) snat(opts []string) error {
	if len(opts) < 2 || opts[0] != "--to-source" {
		return fmt.Errorf("-j SNAT %q", opts)
	}
	ip := net.ParseIP(opts[1])
	if ip == nil || (ip.To4() != nil) != s.v4 {
		return fmt.Errorf("--to-source %q", opts[1])
	}
	const mapIPs = 1
	if v4 := ip.To4(); v4 != nil {
		info := make([]byte, 24)
		native().PutUint32(info, 1) // rangesize
		native().PutUint32(info[4:], mapIPs)
		copy(info[8:], v4)
		copy(info[12:], v4)
		s.target = []expr.Any{xtTarget("SNAT", 0, info)}
		return nil
	}
	info := make([]byte, 40)
	native().PutUint32(info, mapIPs)
	copy(info[4:], ip.To16())
	copy(info[20:], ip.To16())
	s.target = []expr.Any{xtTarget("SNAT", 1, info)}
	return nil
}

// masquerade is MASQUERADE revision 0's info: for IPv4 struct
// nf_nat_ipv4_multi_range_compat with one empty range; for IPv6 an empty
// struct nf_nat_range.
func (s *spec) masquerade() []byte {
	if !s.v4 {
		return make([]byte, 40)
	}
	info := make([]byte, 24)
	native().PutUint32(info, 1) // rangesize
	return info
}

// natRange2 is struct nf_nat_range2 {flags; min_addr, max_addr (16 bytes
// each); min_proto, max_proto, base_proto (network order)}, padded to 8.
// Port 0 maps the address alone.
func natRange2(ip net.IP, port uint16) []byte {
	const mapIPs, protoSpecified = 1, 2
	info := make([]byte, 48)
	flags := uint32(mapIPs)
	if port != 0 {
		flags |= protoSpecified
	}
	native().PutUint32(info, flags)
	a := []byte(ip.To16())
	if v4 := ip.To4(); v4 != nil {
		a = v4
	}
	copy(info[4:], a)
	copy(info[20:], a)
	for _, off := range []int{36, 38} {
		info[off], info[off+1] = byte(port>>8), byte(port)
	}
	return info
}

// addrtypeLocal is struct xt_addrtype_info_v1 {source, dest u16; flags}
// for --dst-type LOCAL.
func addrtypeLocal() []byte {
	const local = 1 << 2 // XT_ADDRTYPE_LOCAL
	info := make([]byte, 8)
	native().PutUint16(info[2:], local)
	return info
}

// sctpDport is struct xt_sctp_info matching destination ports first to
// last, as iptables 1.8.9 fills it: dpts, spts (left 0), a 256-byte chunk map, the
// chunk match type, four flag entries whose chunk type is 0xff, the flag
// count, the flags (XT_SCTP_DEST_PORTS) and invflags; padded to 8.
func sctpDport(first, last uint16) []byte {
	const destPorts = 0x02
	info := make([]byte, 296)
	native().PutUint16(info[0:], first)
	native().PutUint16(info[2:], last)
	for i := 0; i < 4; i++ {
		info[268+3*i] = 0xff
	}
	native().PutUint32(info[284:], destPorts)
	return info
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	native().PutUint32(b, v)
	return b
}

func xtMatch(name string, rev uint32, info []byte) expr.Any {
	i := xt.Unknown(info)
	return &expr.Match{Name: name, Rev: rev, Info: &i}
}

func xtTarget(name string, rev uint32, info []byte) expr.Any {
	i := xt.Unknown(info)
	return &expr.Target{Name: name, Rev: rev, Info: &i}
}
