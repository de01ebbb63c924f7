package netfilter

import (
	"fmt"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Batch collects the messages of one nftables transaction. Each method is
// the netlink form of one nft command, named in its comment. It knows no
// table, map or rule of ours: callers pass names, encoded keys and
// expressions.
//
// google/nftables queues the same messages on its Conn, but a queue there
// is sent only on that Conn's own socket, while one of ours must carry the
// iptables-nft, nftables and reference deletions of a call together and be
// sent on the socket the call read with (see Conn).
type Batch struct {
	msgs     []netlink.Message
	setID    uint32
	err      error
	deleting bool // some message deletes an object that may exist
}

// Hook makes a chain a base chain.
type Hook struct {
	Type string // filter, nat
	Num  uint32 // NF_INET_* (NF_BR_* for bridge: same numbers)
	Prio int32
}

// Empty reports whether the batch holds no message.
func (b *Batch) Empty() bool { return len(b.msgs) == 0 }

// Deletes reports whether the batch deletes anything (rules, chains,
// elements): committing it leaves work for the kernel's deferred release.
func (b *Batch) Deletes() bool { return b.deleting }

// Err returns the first error met while building the batch.
func (b *Batch) Err() error { return b.err }

// Fail records err as the batch's error unless it has one: Apply then
// returns it and sends nothing.
func (b *Batch) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Append adds the messages of o (built for the same transaction) after b's.
func (b *Batch) Append(o *Batch) {
	if o == nil {
		return
	}
	b.msgs = append(b.msgs, o.msgs...)
	if o.err != nil {
		b.Fail(o.err)
	}
	b.deleting = b.deleting || o.deleting
}

func (b *Batch) push(msg int, flags netlink.HeaderFlags, t Table, data []byte) {
	b.msgs = append(b.msgs, netlink.Message{
		Header: netlink.Header{Type: nftMsgType(msg), Flags: netlink.Request | netlink.Acknowledge | flags},
		Data:   append(nfgen(t.Proto()), data...),
	})
}

// AddTable: add table <t>
func (b *Batch) AddTable(t Table) {
	b.push(unix.NFT_MSG_NEWTABLE, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_TABLE_NAME, t.Name)
		ae.Uint32(unix.NFTA_TABLE_FLAGS, 0)
	}))
}

// AddChain: add chain <t> <name> [{ type … hook … priority …; policy accept; }]
func (b *Batch) AddChain(t Table, name string, h *Hook) {
	b.push(unix.NFT_MSG_NEWCHAIN, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, t.Name)
		ae.String(unix.NFTA_CHAIN_NAME, name)
		if h == nil {
			return
		}
		ae.Nested(unix.NFTA_CHAIN_HOOK, func(nae *netlink.AttributeEncoder) error {
			nae.Uint32(unix.NFTA_HOOK_HOOKNUM, h.Num)
			nae.Uint32(unix.NFTA_HOOK_PRIORITY, uint32(h.Prio))
			return nil
		})
		ae.Uint32(unix.NFTA_CHAIN_POLICY, 1) // NF_ACCEPT
		ae.String(unix.NFTA_CHAIN_TYPE, h.Type)
	}))
}

func chainAttrs(t Table, name string) []byte {
	return encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, t.Name)
		ae.String(unix.NFTA_CHAIN_NAME, name)
	})
}

// FlushChain: flush chain <t> <name>
func (b *Batch) FlushChain(t Table, name string) {
	b.deleting = true
	b.FlushNew(t, name)
}

// FlushNew is FlushChain for a chain read as absent: the flush deletes
// nothing (it only guards against a concurrent writer of the same chain).
func (b *Batch) FlushNew(t Table, name string) {
	b.push(unix.NFT_MSG_DELRULE, 0, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.Name)
		ae.String(unix.NFTA_RULE_CHAIN, name)
	}))
}

// DelChain: delete chain <t> <name>
func (b *Batch) DelChain(t Table, name string) {
	b.deleting = true
	b.push(unix.NFT_MSG_DELCHAIN, 0, t, chainAttrs(t, name))
}

// DelRule: delete rule <t> <chain> handle <handle>
func (b *Batch) DelRule(t Table, chain string, handle uint64) {
	b.deleting = true
	b.push(unix.NFT_MSG_DELRULE, 0, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.Name)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
		ae.Uint64(unix.NFTA_RULE_HANDLE, handle)
	}))
}

// AddMap: add map <t> <name> { type <key> : verdict; }, the key given by
// its datatype number and length.
func (b *Batch) AddMap(t Table, name string, keyType, keyLen uint32) {
	b.AddMapUserdata(t, name, keyType, keyLen, nil)
}

// AddMapUserdata is AddMap with the set's user data (what nft reads back
// to print the keys, such as their byte order), when not nil.
func (b *Batch) AddMapUserdata(t Table, name string, keyType, keyLen uint32, udata []byte) {
	b.setID++
	b.push(unix.NFT_MSG_NEWSET, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		if udata != nil {
			defer ae.Bytes(unix.NFTA_SET_USERDATA, udata)
		}
		ae.String(unix.NFTA_SET_TABLE, t.Name)
		ae.String(unix.NFTA_SET_NAME, name)
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP)
		ae.Uint32(unix.NFTA_SET_KEY_TYPE, keyType)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, keyLen)
		ae.Uint32(unix.NFTA_SET_DATA_TYPE, unix.NFT_DATA_VERDICT)
		ae.Uint32(unix.NFTA_SET_DATA_LEN, 0)
		ae.Uint32(unix.NFTA_SET_ID, b.setID)
	}))
}

// Attributes of interval maps of concatenations (linux/netfilter/
// nf_tables.h) that golang.org/x/sys/unix does not name.
const (
	setConcat     = 0x80 // NFT_SET_CONCAT
	setDescConcat = 2    // NFTA_SET_DESC_CONCAT
	setFieldLen   = 1    // NFTA_SET_FIELD_LEN
	setElemKeyEnd = 10   // NFTA_SET_ELEM_KEY_END
)

// AddIntervalMap: add map <t> <name> { type <key> : verdict; flags
// interval; }, its key a concatenation of fields of the given lengths
// (unpadded), as nft writes it: flags map, interval and concat, and the
// field lengths in the set's description (what the kernel's pipapo set
// needs to match ranges of concatenated keys).
func (b *Batch) AddIntervalMap(t Table, name string, keyType, keyLen uint32, fieldLens []uint32) {
	b.setID++
	b.push(unix.NFT_MSG_NEWSET, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_TABLE, t.Name)
		ae.String(unix.NFTA_SET_NAME, name)
		ae.Uint32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP|unix.NFT_SET_INTERVAL|setConcat)
		ae.Uint32(unix.NFTA_SET_KEY_TYPE, keyType)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, keyLen)
		ae.Uint32(unix.NFTA_SET_DATA_TYPE, unix.NFT_DATA_VERDICT)
		ae.Uint32(unix.NFTA_SET_DATA_LEN, 0)
		ae.Uint32(unix.NFTA_SET_ID, b.setID)
		ae.Nested(unix.NFTA_SET_DESC, func(d *netlink.AttributeEncoder) error {
			d.Nested(setDescConcat, func(c *netlink.AttributeEncoder) error {
				for _, l := range fieldLens {
					c.Nested(unix.NFTA_LIST_ELEM, func(f *netlink.AttributeEncoder) error {
						f.Uint32(setFieldLen, l)
						return nil
					})
				}
				return nil
			})
			return nil
		})
	}))
}

func (b *Batch) elem(msg int, flags netlink.HeaderFlags, t Table, set string, key, end []byte, chain string) {
	b.push(msg, flags, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.Name)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(list *netlink.AttributeEncoder) error {
			list.Nested(unix.NFTA_LIST_ELEM, func(e *netlink.AttributeEncoder) error {
				e.Nested(unix.NFTA_SET_ELEM_KEY, func(k *netlink.AttributeEncoder) error {
					k.Bytes(unix.NFTA_DATA_VALUE, key)
					return nil
				})
				if end != nil {
					e.Nested(setElemKeyEnd, func(k *netlink.AttributeEncoder) error {
						k.Bytes(unix.NFTA_DATA_VALUE, end)
						return nil
					})
				}
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

// AddElem: add element <t> <set> { <key> : jump <chain> }, the key encoded
// as the kernel holds it.
func (b *Batch) AddElem(t Table, set string, key []byte, chain string) {
	b.AddElemRange(t, set, key, nil, chain)
}

// AddElemRange is AddElem with the key of the element's range end, for a
// map of AddIntervalMap (nil for other maps).
func (b *Batch) AddElemRange(t Table, set string, key, end []byte, chain string) {
	b.elem(unix.NFT_MSG_NEWSETELEM, netlink.Create, t, set, key, end, chain)
}

// DelElem: delete element <t> <set> { <key> }
func (b *Batch) DelElem(t Table, set string, key []byte) {
	b.DelElemRange(t, set, key, nil)
}

// DelElemRange is DelElem with the key of the element's range end.
func (b *Batch) DelElemRange(t Table, set string, key, end []byte) {
	b.deleting = true
	b.elem(unix.NFT_MSG_DELSETELEM, 0, t, set, key, end, "")
}

// AddRule: add rule <t> <chain> <exprs> comment "<comment>"; an empty
// comment writes none. An expression that cannot be encoded fails the
// batch.
func (b *Batch) AddRule(t Table, chain string, exprs []expr.Any, comment string) {
	b.addRule(t, chain, exprs, 0, func(ae *netlink.AttributeEncoder) {
		if comment != "" {
			ae.Bytes(unix.NFTA_RULE_USERDATA, userdata.AppendString(nil, userdata.TypeComment, comment))
		}
	})
}

// AddXTRule appends a rule the way iptables-nft does: no user data, and
// the compat attribute carrying the rule's layer-4 protocol ("-p"; 0 for
// none), which the kernel hands to xt matches and targets that require
// one (such as "-m sctp").
// Equivalent to: iptables -A <chain> <spec>
func (b *Batch) AddXTRule(t Table, chain string, exprs []expr.Any, proto uint32) {
	b.addXTRule(t, chain, exprs, proto, 0)
}

// AddXTRuleEcho is AddXTRule asking the kernel to send the rule it
// created, with its handle, back to the socket: ApplyEcho returns it.
// Equivalent to: iptables -A <chain> <spec>, then reading its handle
func (b *Batch) AddXTRuleEcho(t Table, chain string, exprs []expr.Any, proto uint32) {
	b.addXTRule(t, chain, exprs, proto, netlink.Echo)
}

func (b *Batch) addXTRule(t Table, chain string, exprs []expr.Any, proto uint32, flags netlink.HeaderFlags) {
	b.addRule(t, chain, exprs, flags, func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.NFTA_RULE_COMPAT, func(c *netlink.AttributeEncoder) error {
			c.Uint32(unix.NFTA_RULE_COMPAT_PROTO, proto)
			c.Uint32(unix.NFTA_RULE_COMPAT_FLAGS, 0)
			return nil
		})
	})
}

func (b *Batch) addRule(t Table, chain string, exprs []expr.Any, flags netlink.HeaderFlags, extra func(ae *netlink.AttributeEncoder)) {
	var list []byte
	for _, e := range exprs {
		data, err := expr.Marshal(t.Proto(), e)
		if err != nil {
			b.Fail(fmt.Errorf("rule of %s %s: %w", t, chain, err))
			return
		}
		list = append(list, encodeAttrs(func(ae *netlink.AttributeEncoder) {
			ae.Do(unix.NLA_F_NESTED|unix.NFTA_LIST_ELEM, func() ([]byte, error) { return data, nil })
		})...)
	}
	b.push(unix.NFT_MSG_NEWRULE, netlink.Create|netlink.Append|flags, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.Name)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
		ae.Do(unix.NLA_F_NESTED|unix.NFTA_RULE_EXPRESSIONS, func() ([]byte, error) { return list, nil })
		extra(ae)
	}))
}
