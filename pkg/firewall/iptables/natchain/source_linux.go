package natchain

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// DumpedSource returns what a dumped rule's "-s" compares (Encoded.Source
// of the same spec), or nil: the data of the comparison that follows the
// load of the source address. exprs is NFTA_RULE_EXPRESSIONS as the kernel
// dumps it.
func DumpedSource(exprs []byte, v4 bool) []byte {
	off := uint32(8)
	if v4 {
		off = 12
	}
	loaded := false
	for _, e := range netfilter.RawExprs(exprs) {
		switch e.Name {
		case "payload":
			p := &expr.Payload{}
			loaded = expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, p) == nil &&
				p.Base == expr.PayloadBaseNetworkHeader && p.Offset == off
		case "cmp":
			c := &expr.Cmp{}
			if loaded && expr.Unmarshal(unix.NFPROTO_IPV4, e.Data, c) == nil {
				return c.Data
			}
		case "bitwise":
		default:
			loaded = false
		}
	}
	return nil
}
