package firewall

import (
	"fmt"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nlBatch collects the messages of one nftables transaction. Each method
// is the netlink form of one nft command, named in its comment.
type nlBatch struct {
	msgs     []netlink.Message
	setID    uint32
	err      error
	deleting bool // some message deletes an object that may exist
}

func (b *nlBatch) empty() bool { return len(b.msgs) == 0 }

// deletes reports whether the batch deletes anything (rules, chains,
// elements): committing it leaves work for the kernel's deferred release.
func (b *nlBatch) deletes() bool { return b.deleting }

func (b *nlBatch) push(msg int, flags netlink.HeaderFlags, t nftTable, data []byte) {
	b.msgs = append(b.msgs, netlink.Message{
		Header: netlink.Header{Type: nftMsgType(msg), Flags: netlink.Request | netlink.Acknowledge | flags},
		Data:   append(nfgen(byte(familyOf[t.family])), data...),
	})
}

// addTable: add table <t>
func (b *nlBatch) addTable(t nftTable) {
	b.push(unix.NFT_MSG_NEWTABLE, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_TABLE_NAME, t.name)
		ae.Uint32(unix.NFTA_TABLE_FLAGS, 0)
	}))
}

// addChain: add chain <t> <name> [{ type … hook … priority …; policy accept; }]
func (b *nlBatch) addChain(t nftTable, name string, h *nftHook) {
	b.push(unix.NFT_MSG_NEWCHAIN, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, t.name)
		ae.String(unix.NFTA_CHAIN_NAME, name)
		if h == nil {
			return
		}
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(nae *netlink.AttributeEncoder) error {
			nae.Uint32(unix.NFTA_HOOK_HOOKNUM, h.num)
			nae.Uint32(unix.NFTA_HOOK_PRIORITY, uint32(h.prio))
			return nil
		})
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 1) // NF_ACCEPT
		ae.String(unix.NFTA_CHAIN_TYPE, h.kind)
	}))
}

func chainAttrs(t nftTable, name string) []byte {
	return encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, t.name)
		ae.String(unix.NFTA_CHAIN_NAME, name)
	})
}

// flushChain: flush chain <t> <name>
func (b *nlBatch) flushChain(t nftTable, name string) {
	b.deleting = true
	b.flushNew(t, name)
}

// flushNew is flushChain for a chain read as absent: the flush deletes
// nothing (it only guards against a concurrent writer of the same chain).
func (b *nlBatch) flushNew(t nftTable, name string) {
	b.push(unix.NFT_MSG_DELRULE, 0, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.name)
		ae.String(unix.NFTA_RULE_CHAIN, name)
	}))
}

// delChain: delete chain <t> <name>
func (b *nlBatch) delChain(t nftTable, name string) {
	b.deleting = true
	b.push(unix.NFT_MSG_DELCHAIN, 0, t, chainAttrs(t, name))
}

// delRule: delete rule <t> <chain> handle <handle>
func (b *nlBatch) delRule(t nftTable, chain string, handle uint64) {
	b.deleting = true
	b.push(unix.NFT_MSG_DELRULE, 0, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.name)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
		ae.Uint64(unix.NFTA_RULE_HANDLE, handle)
	}))
}

// addMap: add map <t> <name> { type <key> : verdict; }
func (b *nlBatch) addMap(t nftTable, m nftMap) {
	b.setID++
	b.push(unix.NFT_MSG_NEWSET, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_TABLE, t.name)
		ae.String(unix.NFTA_SET_NAME, m.name)
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP)
		ae.Uint32(unix.NFTA_SET_KEY_TYPE, m.keyType(t))
		ae.Uint32(unix.NFTA_SET_KEY_LEN, m.keyLen(t))
		ae.Uint32(unix.NFTA_SET_DATA_TYPE, unix.NFT_DATA_VERDICT)
		ae.Uint32(unix.NFTA_SET_DATA_LEN, 0)
		ae.Uint32(unix.NFTA_SET_ID, b.setID)
	}))
}

func (b *nlBatch) elem(msg int, flags netlink.HeaderFlags, t nftTable, el nftElem, chain string) {
	key, err := nftElemKey(t, el)
	if err != nil {
		b.fail(err)
		return
	}
	b.push(msg, flags, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.name)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, el.set)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(list *netlink.AttributeEncoder) error {
			list.Nested(unix.NFTA_LIST_ELEM, func(e *netlink.AttributeEncoder) error {
				e.Nested(unix.NFTA_SET_ELEM_KEY, func(k *netlink.AttributeEncoder) error {
					k.Bytes(unix.NFTA_DATA_VALUE, key)
					return nil
				})
				if chain != "" {
					e.Nested(unix.NFTA_SET_ELEM_DATA, func(d *netlink.AttributeEncoder) error {
						d.Nested(unix.NFTA_DATA_VERDICT, func(v *netlink.AttributeEncoder) error {
							var jump int32 = unix.NFT_JUMP
							v.Uint32(unix.NFTA_VERDICT_CODE, uint32(jump))
							v.String(unix.NFTA_VERDICT_CHAIN, chain)
							return nil
						})
						return nil
					})
				}
				return nil
			})
			return nil
		})
	}))
}

// addElem: add element <t> <set> { <key> : jump <chain> }
func (b *nlBatch) addElem(t nftTable, el nftElem, chain string) {
	b.elem(unix.NFT_MSG_NEWSETELEM, netlink.Create, t, el, chain)
}

// delElem: delete element <t> <set> { <key> }
func (b *nlBatch) delElem(t nftTable, el nftElem) {
	b.deleting = true
	b.elem(unix.NFT_MSG_DELSETELEM, 0, t, el, "")
}

// addRule: add rule <t> <chain> <rule text> comment "<comment>"; a fixed
// rule of a skeleton has no comment.
func (b *nlBatch) addRule(t nftTable, chain string, r nftRule, fixed bool) {
	fam := byte(familyOf[t.family])
	var list []byte
	for _, e := range r.exprs {
		data, err := expr.Marshal(fam, e)
		if err != nil {
			b.fail(fmt.Errorf("rule %q: %w", r.text, err))
			return
		}
		list = append(list, encodeAttrs(func(ae *netlink.AttributeEncoder) {
			ae.Do(unix.NLA_F_NESTED|unix.NFTA_LIST_ELEM, func() ([]byte, error) { return data, nil })
		})...)
	}
	b.push(unix.NFT_MSG_NEWRULE, netlink.Create|netlink.Append, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.name)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
		ae.Do(unix.NLA_F_NESTED|unix.NFTA_RULE_EXPRESSIONS, func() ([]byte, error) { return list, nil })
		if !fixed {
			ae.Bytes(unix.NFTA_RULE_USERDATA, userdata.AppendString(nil, userdata.TypeComment, r.comment()))
		}
	}))
}

func (b *nlBatch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}
