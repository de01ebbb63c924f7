package natchain

import (
	"bytes"
	"encoding/binary"
	"net"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// Mapping is what a dumped DNAT rule of an owner's chain forwards: the
// protocol and host port it matches, and the host address when it matches
// one (-d, or a user's --dst-range beside its conditions).
type Mapping struct {
	Protocol string
	Port     int
	Last     int // the last port of a --dport range; 0 for one port
	Host     net.IP
}

var protocolNames = map[byte]string{unix.IPPROTO_TCP: "tcp", unix.IPPROTO_UDP: "udp", unix.IPPROTO_SCTP: "sctp"}

// DumpedDNAT reads a dumped rule (NFTA_RULE_EXPRESSIONS) as iptables-nft
// writes "-p <proto> -m <proto> --dport <port> … -j DNAT": false for any
// other rule. The reverse of Encode for the shapes the DNAT chain holds.
func DumpedDNAT(exprs []byte, v4 bool) (Mapping, bool) {
	var m Mapping
	dnat := false
	daddr, alen := uint32(24), uint32(16)
	if v4 {
		daddr, alen = 16, 4
	}
	var load *expr.Payload
	var meta bool
	for _, e := range netfilter.RawExprs(exprs) {
		switch e.Name {
		case "meta":
			x := &expr.Meta{}
			meta = expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, x) == nil && x.Key == expr.MetaKeyL4PROTO
			load = nil
			continue
		case "payload":
			load = &expr.Payload{}
			if expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, load) != nil {
				load = nil
			}
			meta = false
			continue
		case "cmp":
			x := &expr.Cmp{}
			if expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, x) == nil && x.Op == expr.CmpOpEq {
				m.cmp(meta, load, x.Data, daddr, alen)
			}
		case "range":
			x := &expr.Range{}
			if expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, x) == nil && x.Op == expr.CmpOpEq && len(x.FromData) == 2 && len(x.ToData) == 2 &&
				load != nil && load.Base == expr.PayloadBaseTransportHeader && load.Offset == 2 && load.Len == 2 {
				m.Port, m.Last = int(binary.BigEndian.Uint16(x.FromData)), int(binary.BigEndian.Uint16(x.ToData))
			}
		case "match":
			m.match(e.Data, v4)
		case "target":
			dnat = dnat || xtName(e.Data, unix.NFTA_TARGET_NAME) == "DNAT"
		}
		meta, load = false, nil
	}
	return m, dnat && m.Protocol != "" && m.Port != 0
}

// cmp takes what a comparison tells after a load of the l4 protocol (meta),
// of the transport header's destination port or of the destination address.
func (m *Mapping) cmp(meta bool, load *expr.Payload, data []byte, daddr, alen uint32) {
	switch {
	case meta && len(data) == 1:
		m.Protocol = protocolNames[data[0]]
	case load == nil:
	case load.Base == expr.PayloadBaseTransportHeader && load.Offset == 2 && load.Len == 2 && len(data) == 2:
		m.Port = int(binary.BigEndian.Uint16(data))
	case load.Base == expr.PayloadBaseNetworkHeader && load.Offset == daddr && load.Len == alen && len(data) == int(alen):
		m.Host = net.IP(bytes.Clone(data))
	}
}

// match takes the port of an sctp match (struct xt_sctp_info: dpts first)
// and the destination of an iprange match (struct xt_iprange_mtinfo:
// src_min, src_max, dst_min, dst_max as 16-byte unions, then flags).
func (m *Mapping) match(data []byte, v4 bool) {
	info := xtInfo(data)
	switch xtName(data, unix.NFTA_MATCH_NAME) {
	case "sctp":
		if len(info) >= 4 {
			m.Port = int(native().Uint16(info))
			if last := int(native().Uint16(info[2:])); last > m.Port {
				m.Last = last
			}
		}
	case "iprange":
		const dst, dstInv = 1 << 1, 1 << 3
		if len(info) > 64 && info[64]&dst != 0 && info[64]&dstInv == 0 && m.Host == nil {
			end := 48
			if v4 {
				end = 36 // an IPv4 address fills the union's first bytes
			}
			m.Host = net.IP(bytes.Clone(info[32:end]))
		}
	}
}

// xtName returns the name attribute of an xt match or target.
func xtName(data []byte, attr uint16) string {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == attr {
			return string(bytes.TrimRight(ad.Bytes(), "\x00"))
		}
	}
	return ""
}

// xtInfo returns the info attribute of an xt match.
func xtInfo(data []byte) []byte {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_MATCH_INFO {
			return ad.Bytes()
		}
	}
	return nil
}
