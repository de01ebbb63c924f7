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
	echoes   int  // messages whose rule the kernel echoes back
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
	b.echoes += o.echoes
}

func (b *Batch) push(msg int, flags netlink.HeaderFlags, t Table, data []byte) {
	b.msgs = append(b.msgs, netlink.Message{
		// No ack asked: Apply asks one of the last message only.
		Header: netlink.Header{Type: nftMsgType(msg), Flags: netlink.Request | flags},
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

// SetSpec describes a named set or map: its key (datatype number, length
// and, for an interval set of a concatenation, the unpadded length of each
// field) and what its elements map to: nothing (a set), a verdict, or data
// of a datatype and length.
type SetSpec struct {
	Name              string
	KeyType, KeyLen   uint32
	Interval          bool
	FieldLens         []uint32 // with Interval: the concatenation's fields
	Verdict           bool     // a verdict map
	DataType, DataLen uint32   // a data map when DataLen > 0
	Udata             []byte   // the set's user data, when not nil
}

// Attributes of interval maps of concatenations (linux/netfilter/
// nf_tables.h) that golang.org/x/sys/unix does not name.
const (
	setConcat     = 0x80 // NFT_SET_CONCAT
	setDescConcat = 2    // NFTA_SET_DESC_CONCAT
	setFieldLen   = 1    // NFTA_SET_FIELD_LEN
	setElemKeyEnd = 10   // NFTA_SET_ELEM_KEY_END
)

// AddSet: add set <t> <name> { type <key>; } or add map <t> <name> { type
// <key> : verdict|<data>; }, with "flags interval;" for an Interval set, as
// nft writes them: an interval set of a concatenation also carries the
// concat flag and its field lengths in its description (what the kernel's
// pipapo set needs to match ranges of concatenated keys).
func (b *Batch) AddSet(t Table, s SetSpec) {
	b.setID++
	var flags uint32
	if s.Verdict || s.DataLen > 0 {
		flags |= unix.NFT_SET_MAP
	}
	if s.Interval {
		flags |= unix.NFT_SET_INTERVAL
		if len(s.FieldLens) > 1 {
			flags |= setConcat
		}
	}
	b.push(unix.NFT_MSG_NEWSET, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		if s.Udata != nil {
			defer ae.Bytes(unix.NFTA_SET_USERDATA, s.Udata)
		}
		ae.String(unix.NFTA_SET_TABLE, t.Name)
		ae.String(unix.NFTA_SET_NAME, s.Name)
		ae.Uint32(unix.NFTA_SET_FLAGS, flags)
		ae.Uint32(unix.NFTA_SET_KEY_TYPE, s.KeyType)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, s.KeyLen)
		switch {
		case s.Verdict:
			ae.Uint32(unix.NFTA_SET_DATA_TYPE, unix.NFT_DATA_VERDICT)
			ae.Uint32(unix.NFTA_SET_DATA_LEN, 0)
		case s.DataLen > 0:
			ae.Uint32(unix.NFTA_SET_DATA_TYPE, s.DataType)
			ae.Uint32(unix.NFTA_SET_DATA_LEN, s.DataLen)
		}
		ae.Uint32(unix.NFTA_SET_ID, b.setID)
		if s.Interval && len(s.FieldLens) > 1 {
			ae.Nested(unix.NFTA_SET_DESC, func(d *netlink.AttributeEncoder) error {
				d.Nested(setDescConcat, func(c *netlink.AttributeEncoder) error {
					for _, l := range s.FieldLens {
						c.Nested(unix.NFTA_LIST_ELEM, func(f *netlink.AttributeEncoder) error {
							f.Uint32(setFieldLen, l)
							return nil
						})
					}
					return nil
				})
				return nil
			})
		}
	}))
}

// Elem is an element of a named set or map as the kernel holds it: its
// key, the key of its range's end (interval sets of concatenations; nil
// otherwise), and what it maps to: a chain it jumps to (verdict maps) or
// data (data maps); Comment is the comment nft shows beside it.
type Elem struct {
	Key, End []byte
	Chain    string
	Data     []byte
	Comment  string
}

func (b *Batch) elem(msg int, flags netlink.HeaderFlags, t Table, set string, el Elem) {
	b.push(msg, flags, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.Name)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(list *netlink.AttributeEncoder) error {
			list.Nested(unix.NFTA_LIST_ELEM, func(e *netlink.AttributeEncoder) error {
				encodeElem(e, el)
				return nil
			})
			return nil
		})
	}))
}

func encodeElem(e *netlink.AttributeEncoder, el Elem) {
	value := func(attr uint16, v []byte) {
		e.Nested(attr, func(k *netlink.AttributeEncoder) error {
			k.Bytes(unix.NFTA_DATA_VALUE, v)
			return nil
		})
	}
	value(unix.NFTA_SET_ELEM_KEY, el.Key)
	if el.End != nil {
		value(setElemKeyEnd, el.End)
	}
	switch {
	case el.Chain != "":
		e.Nested(unix.NFTA_SET_ELEM_DATA, func(d *netlink.AttributeEncoder) error {
			d.Nested(unix.NFTA_DATA_VERDICT, func(v *netlink.AttributeEncoder) error {
				var jump int32 = unix.NFT_JUMP
				v.Uint32(unix.NFTA_VERDICT_CODE, uint32(jump))
				v.String(unix.NFTA_VERDICT_CHAIN, el.Chain)
				return nil
			})
			return nil
		})
	case el.Data != nil:
		value(unix.NFTA_SET_ELEM_DATA, el.Data)
	}
	if el.Comment != "" {
		e.Bytes(unix.NFTA_SET_ELEM_USERDATA, userdata.AppendString(nil, userdata.TypeComment, el.Comment))
	}
}

// AddElem: add element <t> <set> { <key> : jump <chain> }, the key encoded
// as the kernel holds it.
func (b *Batch) AddElem(t Table, set string, key []byte, chain string) {
	b.AddElemRange(t, set, key, nil, chain)
}

// AddElemRange is AddElem with the key of the element's range end, for a
// interval map (nil for other maps).
func (b *Batch) AddElemRange(t Table, set string, key, end []byte, chain string) {
	b.elem(unix.NFT_MSG_NEWSETELEM, netlink.Create, t, set, Elem{Key: key, End: end, Chain: chain})
}

// AddSetElem: add element <t> <set> { <key> comment "<comment>" [: <data>] }
// to a set or data map; with excl, create element: the kernel refuses a key
// already held, whatever it maps to.
func (b *Batch) AddSetElem(t Table, set string, el Elem, excl bool) {
	flags := netlink.Create
	if excl {
		flags |= netlink.Excl
	}
	b.elem(unix.NFT_MSG_NEWSETELEM, flags, t, set, el)
}

// DelElem: delete element <t> <set> { <key> }
func (b *Batch) DelElem(t Table, set string, key []byte) {
	b.DelElemRange(t, set, key, nil)
}

// DelElemRange is DelElem with the key of the element's range end.
func (b *Batch) DelElemRange(t Table, set string, key, end []byte) {
	b.deleting = true
	b.elem(unix.NFT_MSG_DELSETELEM, 0, t, set, Elem{Key: key, End: end})
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
	b.echoes++
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
