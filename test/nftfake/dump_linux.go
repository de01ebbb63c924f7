package nftfake

import (
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// request answers one request outside a transaction: a get (one message,
// or the error) or a dump (messages up to NLMSG_DONE), as the kernel
// encodes them.
func (f *Fake) request(m netlink.Message) [][]byte {
	if m.Header.Type>>8 != unix.NFNL_SUBSYS_NFTABLES || len(m.Data) < 4 {
		return [][]byte{ack(m, unix.EINVAL)}
	}
	family := m.Data[0]
	a, err := parseAttrs(m.Data[4:])
	if err == nil && f.failRead != 0 {
		err = f.failRead
	}
	if err != nil {
		return [][]byte{ack(m, err)}
	}
	dumping := m.Header.Flags&netlink.Dump == netlink.Dump
	var typ int
	var bodies [][]byte
	switch int(m.Header.Type & 0xff) {
	case unix.NFT_MSG_GETTABLE:
		typ = unix.NFT_MSG_NEWTABLE
		bodies, err = f.getTable(family, a)
	case unix.NFT_MSG_GETCHAIN:
		typ = unix.NFT_MSG_NEWCHAIN
		bodies, err = f.chains(family, a, dumping)
	case unix.NFT_MSG_GETRULE:
		typ = unix.NFT_MSG_NEWRULE
		bodies, err = f.rules(family, a, dumping)
	case unix.NFT_MSG_GETSETELEM:
		typ = unix.NFT_MSG_NEWSETELEM
		bodies, err = f.elems(family, a, dumping)
	default:
		err = unix.EOPNOTSUPP
	}
	switch {
	case err != nil:
		return [][]byte{ack(m, err)}
	case dumping:
		return dump(m.Header.Sequence, msgType(typ), bodies)
	}
	var out [][]byte
	for _, b := range bodies {
		out = append(out, frame(msgType(typ), 0, m.Header.Sequence, b))
	}
	if m.Header.Flags&netlink.Acknowledge != 0 {
		out = append(out, ack(m, nil))
	}
	return out
}

// getTable answers a get of one table: its message, or ENOENT.
func (f *Fake) getTable(family byte, a attrs) ([][]byte, error) {
	n, err := name(a, unix.NFTA_TABLE_NAME)
	if err != nil {
		return nil, err
	}
	t := f.rs.table(family, n)
	if t == nil {
		return nil, unix.ENOENT
	}
	return [][]byte{append(nfgen(family), encode(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_TABLE_NAME, t.name)
		ae.Uint32(unix.NFTA_TABLE_FLAGS, 0)
		ae.Uint32(unix.NFTA_TABLE_USE, uint32(len(t.chains)+len(t.sets)))
	})...)}, nil
}

// tables returns the tables a request of family is about (every family
// for NFPROTO_UNSPEC), those named by attribute attr if it is present.
func (f *Fake) tables(family byte, a attrs, attr uint16) []*table {
	n, named := a.str(attr)
	var out []*table
	for _, t := range f.rs.tables {
		if (family == unix.NFPROTO_UNSPEC || t.family == family) && (!named || t.name == n) {
			out = append(out, t)
		}
	}
	return out
}

// chains answers a get of one chain (ENOENT for a missing table or
// chain) or a dump of every chain of the family.
func (f *Fake) chains(family byte, a attrs, dumping bool) ([][]byte, error) {
	var out [][]byte
	if dumping {
		for _, t := range f.tables(family, a, unix.NFTA_CHAIN_TABLE) {
			for _, c := range t.chains {
				out = append(out, append(nfgen(t.family), chainAttrs(t, c)...))
			}
		}
		return out, nil
	}
	t, c, err := f.rs.chainOf(family, a, unix.NFTA_CHAIN_TABLE, unix.NFTA_CHAIN_NAME)
	if err != nil {
		return nil, err
	}
	return [][]byte{append(nfgen(family), chainAttrs(t, c)...)}, nil
}

// chainAttrs encodes a chain as the kernel dumps it.
func chainAttrs(t *table, c *chain) []byte {
	return encode(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, t.name)
		ae.String(unix.NFTA_CHAIN_NAME, c.name)
		ae.Uint64(unix.NFTA_CHAIN_HANDLE, c.handle)
		if h := c.hook; h != nil {
			ae.Nested(unix.NFTA_CHAIN_HOOK, func(n *netlink.AttributeEncoder) error {
				n.Uint32(unix.NFTA_HOOK_HOOKNUM, h.num)
				n.Uint32(unix.NFTA_HOOK_PRIORITY, uint32(h.prio))
				return nil
			})
			ae.Uint32(unix.NFTA_CHAIN_POLICY, h.policy)
			ae.String(unix.NFTA_CHAIN_TYPE, h.typ)
			ae.Uint32(10, 1) // NFTA_CHAIN_FLAGS: NFT_CHAIN_BASE
		}
		ae.Uint32(unix.NFTA_CHAIN_USE, t.use(c))
	})
}

// rules answers a get of one rule by handle (ENOENT for a missing table,
// chain or rule) or a dump of the rules of the tables and chain named (a
// missing one: none).
func (f *Fake) rules(family byte, a attrs, dumping bool) ([][]byte, error) {
	if !dumping {
		t, c, err := f.rs.chainOf(family, a, unix.NFTA_RULE_TABLE, unix.NFTA_RULE_CHAIN)
		if err != nil {
			return nil, err
		}
		h, ok := a.u64(unix.NFTA_RULE_HANDLE)
		if !ok {
			return nil, unix.EINVAL
		}
		for i, r := range c.rules {
			if r.handle == h {
				return [][]byte{append(nfgen(family), ruleAttrs(t, c, r, prev(c, i))...)}, nil
			}
		}
		return nil, unix.ENOENT
	}
	cn, named := a.str(unix.NFTA_RULE_CHAIN)
	var out [][]byte
	for _, t := range f.tables(family, a, unix.NFTA_RULE_TABLE) {
		for _, c := range t.chains {
			if named && c.name != cn {
				continue
			}
			for i, r := range c.rules {
				out = append(out, append(nfgen(t.family), ruleAttrs(t, c, r, prev(c, i))...))
			}
		}
	}
	return out, nil
}

// prev is the rule before the i-th of a chain, or nil.
func prev(c *chain, i int) *rule {
	if i == 0 {
		return nil
	}
	return c.rules[i-1]
}

// ruleAttrs encodes a rule as the kernel dumps it: the position is the
// handle of the rule before it.
func ruleAttrs(t *table, c *chain, r, before *rule) []byte {
	return encode(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, t.name)
		ae.String(unix.NFTA_RULE_CHAIN, c.name)
		ae.Uint64(unix.NFTA_RULE_HANDLE, r.handle)
		if before != nil {
			ae.Uint64(unix.NFTA_RULE_POSITION, before.handle)
		}
		raw(ae, unix.NFTA_RULE_EXPRESSIONS, r.exprs)
		if r.userdata != nil {
			ae.Bytes(unix.NFTA_RULE_USERDATA, r.userdata)
		}
	})
}

// elemsPerMessage bounds the elements of one dumped message (the kernel
// fills a message up to its buffer).
const elemsPerMessage = 64

// elems answers a dump of a set's elements or a get of the elements a
// request lists (ENOENT for a missing table, set, or element).
func (f *Fake) elems(family byte, a attrs, dumping bool) ([][]byte, error) {
	tn, err := name(a, unix.NFTA_SET_ELEM_LIST_TABLE)
	if err != nil {
		return nil, err
	}
	sn, err := name(a, unix.NFTA_SET_ELEM_LIST_SET)
	if err != nil {
		return nil, err
	}
	t := f.rs.table(family, tn)
	if t == nil || t.set(sn) == nil {
		return nil, unix.ENOENT
	}
	s := t.set(sn)
	if !dumping {
		return f.getElems(t, s, a)
	}
	var out [][]byte
	for i := 0; i == 0 || i < len(s.elems); i += elemsPerMessage {
		out = append(out, elemsMessage(t, s, s.elems[i:min(i+elemsPerMessage, len(s.elems))]))
	}
	return out, nil
}

// getElems answers a get of elements: one message for each, the element
// whose range holds the key asked (its own key, in a set of single keys).
func (f *Fake) getElems(t *table, s *set, a attrs) ([][]byte, error) {
	raw, ok := a[unix.NFTA_SET_ELEM_LIST_ELEMENTS]
	if !ok {
		return nil, unix.EINVAL
	}
	asked, err := list(raw)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, b := range asked {
		e, err := parseElem(t, s, b, false)
		if err != nil {
			return nil, err
		}
		i := s.lookup(e)
		if i < 0 {
			return nil, unix.ENOENT
		}
		out = append(out, elemsMessage(t, s, s.elems[i:i+1]))
	}
	return out, nil
}

// lookup returns the index of the element a get of e finds, or -1.
func (s *set) lookup(e elem) int {
	if !s.concat() {
		return s.find(e)
	}
	for i, x := range s.elems {
		if inRange(s.fieldLens, x, e.key) {
			return i
		}
	}
	return -1
}

func elemsMessage(t *table, s *set, elems []elem) []byte {
	return append(nfgen(t.family), encode(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.name)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, s.name)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(l *netlink.AttributeEncoder) error {
			for _, e := range elems {
				l.Nested(unix.NFTA_LIST_ELEM, func(n *netlink.AttributeEncoder) error {
					elemAttrs(n, e)
					return nil
				})
			}
			return nil
		})
	})...)
}

// elemAttrs encodes an element as the kernel dumps it.
func elemAttrs(ae *netlink.AttributeEncoder, e elem) {
	val := func(t uint16, v []byte) {
		ae.Nested(t, func(n *netlink.AttributeEncoder) error {
			n.Bytes(unix.NFTA_DATA_VALUE, v)
			return nil
		})
	}
	val(unix.NFTA_SET_ELEM_KEY, e.key)
	if e.end != nil {
		val(10, e.end) // NFTA_SET_ELEM_KEY_END
	}
	switch {
	case e.verdict != nil:
		ae.Nested(unix.NFTA_SET_ELEM_DATA, func(d *netlink.AttributeEncoder) error {
			d.Nested(unix.NFTA_DATA_VERDICT, func(v *netlink.AttributeEncoder) error {
				v.Uint32(unix.NFTA_VERDICT_CODE, uint32(e.verdict.code))
				if e.verdict.chain != "" {
					v.String(unix.NFTA_VERDICT_CHAIN, e.verdict.chain)
				}
				return nil
			})
			return nil
		})
	case e.data != nil:
		val(unix.NFTA_SET_ELEM_DATA, e.data)
	}
	if e.flags != 0 {
		ae.Uint32(unix.NFTA_SET_ELEM_FLAGS, e.flags)
	}
	if e.userdata != nil {
		ae.Bytes(unix.NFTA_SET_ELEM_USERDATA, e.userdata)
	}
}
