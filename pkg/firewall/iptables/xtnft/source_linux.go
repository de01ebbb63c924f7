package xtnft

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// DumpedSource returns what a dumped rule's "-s" compares (Rule.Source
// of the same spec), or nil: the data of the comparison that follows the
// load of the source address. exprs is NFTA_RULE_EXPRESSIONS as the kernel
// dumps it.
func DumpedSource(exprs []byte, v4 bool) []byte {
	off := uint32(8)
	if v4 {
		off = 12
	}
	list, err := netlink.NewAttributeDecoder(exprs)
	if err != nil {
		return nil
	}
	loaded := false
	for list.Next() {
		name, data := exprOf(list.Bytes())
		switch name {
		case "payload":
			p := &expr.Payload{}
			loaded = expr.Unmarshal(unix.NFPROTO_IPV4, data, p) == nil &&
				p.Base == expr.PayloadBaseNetworkHeader && p.Offset == off
		case "cmp":
			c := &expr.Cmp{}
			if loaded && expr.Unmarshal(unix.NFPROTO_IPV4, data, c) == nil {
				return c.Data
			}
		case "bitwise":
		default:
			loaded = false
		}
	}
	return nil
}

// exprOf returns the name and the data of one dumped expression.
func exprOf(b []byte) (name string, data []byte) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return "", nil
	}
	ad.ByteOrder = binary.BigEndian
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_EXPR_NAME:
			name = ad.String()
		case unix.NFTA_EXPR_DATA:
			data = ad.Bytes()
		}
	}
	return name, data
}
