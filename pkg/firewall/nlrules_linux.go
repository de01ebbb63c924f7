package firewall

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nlRule is what we need of a listed rule: its handle and comment.
type nlRule struct {
	handle  uint64
	comment string
}

// nlListRules dumps the rules of one chain over netlink, decoding only
// handles and comments, so that no expression (ours or one a user put in
// conditions) can make the listing fail. A missing table or chain yields
// no rules. Equivalent to: nft -a list chain <family> <table> <chain>
func nlListRules(family byte, table, chain string) ([]nlRule, error) {
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("netlink dial: %w", err)
	}
	defer conn.Close()
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_RULE_TABLE, table)
	ae.String(unix.NFTA_RULE_CHAIN, chain)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msg := netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETRULE),
			Flags: netlink.Request | netlink.Dump,
		},
		Data: append([]byte{family, unix.NFNETLINK_V0, 0, 0}, attrs...),
	}
	msgs, err := conn.Execute(msg)
	if err != nil {
		return nil, fmt.Errorf("listing rules of %s %s: %w", table, chain, err)
	}
	var out []nlRule
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		r, err := decodeNLRule(m.Data[4:])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeNLRule(b []byte) (nlRule, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nlRule{}, err
	}
	ad.ByteOrder = binary.BigEndian
	var r nlRule
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_RULE_HANDLE:
			r.handle = ad.Uint64()
		case unix.NFTA_RULE_USERDATA:
			r.comment, _ = userdata.GetString(ad.Bytes(), userdata.TypeComment)
		case unix.NFTA_RULE_EXPRESSIONS:
			if r.comment == "" {
				r.comment = xtComment(ad.Bytes())
			}
		}
	}
	return r, ad.Err()
}

// xtComment returns the text of an iptables-nft "-m comment" match found in
// a rule's expressions (an xt match named comment whose info is the
// NUL-terminated text), or "".
func xtComment(exprs []byte) string {
	list, err := netlink.NewAttributeDecoder(exprs)
	if err != nil {
		return ""
	}
	for list.Next() {
		ex, err := netlink.NewAttributeDecoder(list.Bytes())
		if err != nil {
			return ""
		}
		var name string
		var data []byte
		for ex.Next() {
			switch ex.Type() {
			case unix.NFTA_EXPR_NAME:
				name = ex.String()
			case unix.NFTA_EXPR_DATA:
				data = ex.Bytes()
			}
		}
		if name == "match" {
			if c := xtMatchComment(data); c != "" {
				return c
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
