package netfilter

import (
	"bytes"
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Rule is what we need of a listed rule: its handle, its comment and
// the chain it jumps or goes to, if any.
//
// google/nftables' GetRules decodes every expression into typed values and
// fails the whole listing on one it cannot decode (an xt match of
// iptables-nft, a user's condition); a listing here must never fail on a
// rule that is not ours, and decoding only these fields costs nothing per
// expression.
type Rule struct {
	Chain   string
	Handle  uint64
	Comment string // the nft comment, or the text of an iptables-nft "-m comment"
	Jump    string
	Exprs   []byte // NFTA_RULE_EXPRESSIONS as the kernel dumped it
	// Userdata is NFTA_RULE_USERDATA as the kernel dumped it (nil when the
	// rule has none, as iptables-nft's rules).
	Userdata []byte
}

func decodeRule(b []byte) (Rule, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Rule{}, err
	}
	ad.ByteOrder = binary.BigEndian
	var r Rule
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_RULE_CHAIN:
			r.Chain = ad.String()
		case unix.NFTA_RULE_HANDLE:
			r.Handle = ad.Uint64()
		case unix.NFTA_RULE_USERDATA:
			r.Userdata = ad.Bytes()
			r.Comment, _ = userdata.GetString(r.Userdata, userdata.TypeComment)
		case unix.NFTA_RULE_EXPRESSIONS:
			r.Exprs = ad.Bytes()
			xt, jump := scanExprs(r.Exprs)
			if r.Comment == "" {
				r.Comment = xt
			}
			r.Jump = jump
		}
	}
	return r, ad.Err()
}

// scanExprs returns the text of an iptables-nft "-m comment" match found
// in a rule's expressions (an xt match named comment whose info is the
// NUL-terminated text) and the chain of an immediate jump or goto.
func scanExprs(exprs []byte) (comment, jump string) {
	for _, e := range RawExprs(exprs) {
		switch e.Name {
		case "match":
			if c := xtMatchComment(e.Data); c != "" && comment == "" {
				comment = c
			}
		case "immediate":
			if j := immediateChain(e.Data); j != "" {
				jump = j
			}
		}
	}
	return comment, jump
}

// RawExpr is one expression of a dumped rule: its kind and its
// NFTA_EXPR_DATA, undecoded.
type RawExpr struct {
	Name string
	Data []byte
}

// RawExprs splits a dumped rule's NFTA_RULE_EXPRESSIONS into its
// expressions, in order; it stops at the first one it cannot read.
func RawExprs(exprs []byte) []RawExpr {
	list, err := netlink.NewAttributeDecoder(exprs)
	if err != nil {
		return nil
	}
	var out []RawExpr
	for list.Next() {
		ex, err := netlink.NewAttributeDecoder(list.Bytes())
		if err != nil {
			return out
		}
		var e RawExpr
		for ex.Next() {
			switch ex.Type() {
			case unix.NFTA_EXPR_NAME:
				e.Name = ex.String()
			case unix.NFTA_EXPR_DATA:
				e.Data = ex.Bytes()
			}
		}
		out = append(out, e)
	}
	return out
}

// immediateChain returns the chain of an immediate expression's verdict.
func immediateChain(data []byte) string {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() != unix.NFTA_IMMEDIATE_DATA {
			continue
		}
		vd, err := netlink.NewAttributeDecoder(ad.Bytes())
		if err != nil {
			return ""
		}
		for vd.Next() {
			if vd.Type() == unix.NFTA_DATA_VERDICT {
				return VerdictChain(vd.Bytes())
			}
		}
	}
	return ""
}

func xtMatchComment(data []byte) string {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ""
	}
	var name string
	var info []byte
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_MATCH_NAME:
			name = ad.String()
		case unix.NFTA_MATCH_INFO:
			info = ad.Bytes()
		}
	}
	if name != "comment" {
		return ""
	}
	if i := bytes.IndexByte(info, 0); i >= 0 {
		info = info[:i]
	}
	return string(info)
}

// ParseExprs decodes the expressions of a dumped rule, as far as they are
// of the kinds our fixed rules use; ok is false for any other kind.
func ParseExprs(family byte, b []byte) (out []expr.Any, ok bool) {
	list, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, false
	}
	for list.Next() {
		ex, err := netlink.NewAttributeDecoder(list.Bytes())
		if err != nil {
			return nil, false
		}
		var name string
		for ex.Next() {
			switch ex.Type() {
			case unix.NFTA_EXPR_NAME:
				name = ex.String()
			case unix.NFTA_EXPR_DATA:
				if name == "byteorder" { // google/nftables cannot read it
					b, ok := decodeByteorder(ex.Bytes())
					if !ok {
						return nil, false
					}
					out = append(out, b)
					continue
				}
				e := exprOfName(name)
				if e == nil || expr.Unmarshal(family, ex.Bytes(), e) != nil {
					return nil, false
				}
				if imm, isImm := e.(*expr.Immediate); isImm && imm.Register == 0 && len(imm.Data) == 0 {
					v := &expr.Verdict{}
					if expr.Unmarshal(family, ex.Bytes(), v) != nil {
						return nil, false
					}
					e = v
				}
				out = append(out, e)
			}
		}
	}
	return out, list.Err() == nil
}

func exprOfName(name string) expr.Any {
	switch name {
	case "payload":
		return &expr.Payload{}
	case "cmp":
		return &expr.Cmp{}
	case "meta":
		return &expr.Meta{}
	case "lookup":
		return &expr.Lookup{}
	case "immediate":
		return &expr.Immediate{}
	case "fib":
		return &expr.Fib{}
	case "ct":
		return &expr.Ct{}
	case "bitwise":
		return &expr.Bitwise{}
	case "masq":
		return &expr.Masq{}
	case "nat":
		return &expr.NAT{}
	}
	return nil
}

// decodeByteorder reads a byteorder expression's attributes.
func decodeByteorder(b []byte) (*expr.Byteorder, bool) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, false
	}
	ad.ByteOrder = binary.BigEndian
	e := &expr.Byteorder{}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_BYTEORDER_SREG:
			e.SourceRegister = ad.Uint32()
		case unix.NFTA_BYTEORDER_DREG:
			e.DestRegister = ad.Uint32()
		case unix.NFTA_BYTEORDER_OP:
			e.Op = expr.ByteorderOp(ad.Uint32())
		case unix.NFTA_BYTEORDER_LEN:
			e.Len = ad.Uint32()
		case unix.NFTA_BYTEORDER_SIZE:
			e.Size = ad.Uint32()
		}
	}
	return e, ad.Err() == nil
}

// VerdictChain returns the chain of a verdict's data (the nested
// NFTA_VERDICT_* attributes of a verdict-map element or an immediate
// expression), or "".
func VerdictChain(val []byte) string {
	ad, err := netlink.NewAttributeDecoder(val)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_VERDICT_CHAIN {
			return ad.String()
		}
	}
	return ""
}
