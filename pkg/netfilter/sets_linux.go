package netfilter

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// SetElem is an element of an anonymous set, its key as the kernel holds
// it; End marks the first key past an interval of an interval set.
type SetElem struct {
	Key []byte
	End bool
}

// AnonSetName is the name every anonymous set is created under: the
// kernel numbers it; rules reach it by the ID AddAnonSet returns.
const AnonSetName = "__set%d"

// AnonSet is an anonymous set as a rule holds it: nft's datatype number
// and length of its key, whether it is an interval set (an element is a
// range), its user data (what nft reads back to print the keys, such as
// their byte order; nil: none) and its elements.
type AnonSet struct {
	KeyType, KeyLen uint32
	Interval        bool
	UserData        []byte
	Elems           []SetElem
}

// AddAnonSet adds an anonymous, constant set with its elements, as nft
// does for "{ a, b, c/16 }" in a rule, and returns its ID in the batch,
// which the rule's lookup names.
// Equivalent to: the set nft makes for an inline "{ … }"
func (b *Batch) AddAnonSet(t Table, s AnonSet) uint32 {
	b.setID++
	id := b.setID
	flags := uint32(unix.NFT_SET_ANONYMOUS | unix.NFT_SET_CONSTANT)
	if s.Interval {
		flags |= unix.NFT_SET_INTERVAL
	}
	b.push(unix.NFT_MSG_NEWSET, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_TABLE, t.Name)
		ae.String(unix.NFTA_SET_NAME, AnonSetName)
		ae.Uint32(unix.NFTA_SET_FLAGS, flags)
		ae.Uint32(unix.NFTA_SET_KEY_TYPE, s.KeyType)
		ae.Uint32(unix.NFTA_SET_KEY_LEN, s.KeyLen)
		ae.Uint32(unix.NFTA_SET_ID, id)
		ae.Nested(unix.NFTA_SET_DESC, func(d *netlink.AttributeEncoder) error {
			d.Uint32(unix.NFTA_SET_DESC_SIZE, uint32(len(s.Elems)))
			return nil
		})
		if s.UserData != nil {
			ae.Bytes(unix.NFTA_SET_USERDATA, s.UserData)
		}
	}))
	b.push(unix.NFT_MSG_NEWSETELEM, netlink.Create, t, encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.Name)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, AnonSetName)
		ae.Uint32(unix.NFTA_SET_ELEM_LIST_SET_ID, id)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(list *netlink.AttributeEncoder) error {
			for _, el := range s.Elems {
				list.Nested(unix.NFTA_LIST_ELEM, func(e *netlink.AttributeEncoder) error {
					if el.End {
						e.Uint32(unix.NFTA_SET_ELEM_FLAGS, unix.NFT_SET_ELEM_INTERVAL_END)
					}
					e.Nested(unix.NFTA_SET_ELEM_KEY, func(k *netlink.AttributeEncoder) error {
						k.Bytes(unix.NFTA_DATA_VALUE, el.Key)
						return nil
					})
					return nil
				})
			}
			return nil
		})
	}))
	return id
}

// MapElems dumps the elements of a set or map; a missing table or map
// yields none.
// Equivalent to: nft list map <family> <table> <map>
func (n *Conn) MapElems(family byte, table, set string) ([]Elem, error) {
	if len(table) > maxName || len(set) > maxName {
		return nil, nil
	}
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, table)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
	})
	msgs, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETSETELEM), Flags: netlink.Request | netlink.Dump},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing map %s %s: %w", table, set, err)
	}
	var out []Elem
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		elems, err := decodeMapElems(m.Data[4:])
		if err != nil {
			return nil, fmt.Errorf("listing map %s %s: %w", table, set, err)
		}
		out = append(out, elems...)
	}
	return out, nil
}

// GetElem reads the element of a set or map with the given key (and range
// end, for an interval set of a concatenation); found is false when the set
// holds no such element, or the set or its table is missing.
// Equivalent to: nft get element <family> <table> <set> { <key> }
func (n *Conn) GetElem(family byte, table, set string, key, end []byte) (el Elem, found bool, err error) {
	if len(table) > maxName || len(set) > maxName {
		return Elem{}, false, nil
	}
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, table)
		ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
		ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(list *netlink.AttributeEncoder) error {
			list.Nested(unix.NFTA_LIST_ELEM, func(e *netlink.AttributeEncoder) error {
				encodeElem(e, Elem{Key: key, End: end})
				return nil
			})
			return nil
		})
	})
	msgs, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETSETELEM), Flags: netlink.Request},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) {
		return Elem{}, false, nil
	}
	if err != nil {
		return Elem{}, false, fmt.Errorf("reading an element of %s %s: %w", table, set, err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		elems, err := decodeMapElems(m.Data[4:])
		if err != nil {
			return Elem{}, false, fmt.Errorf("reading an element of %s %s: %w", table, set, err)
		}
		if len(elems) > 0 {
			return elems[0], true, nil
		}
	}
	return Elem{}, false, nil
}

// decodeMapElems reads the NFTA_SET_ELEM_LIST_ELEMENTS of one message.
func decodeMapElems(b []byte) ([]Elem, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	var out []Elem
	for ad.Next() {
		if ad.Type() != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			continue
		}
		ad.Nested(func(list *netlink.AttributeDecoder) error {
			for list.Next() {
				var el Elem
				list.Nested(func(e *netlink.AttributeDecoder) error {
					for e.Next() {
						switch e.Type() {
						case unix.NFTA_SET_ELEM_KEY:
							el.Key = dataValue(e.Bytes())
						case setElemKeyEnd:
							el.End = dataValue(e.Bytes())
						case unix.NFTA_SET_ELEM_DATA:
							if el.Chain = verdictOfData(e.Bytes()); el.Chain == "" {
								el.Data = dataValue(e.Bytes())
							}
						case unix.NFTA_SET_ELEM_USERDATA:
							el.Comment, _ = userdata.GetString(e.Bytes(), userdata.TypeComment)
						}
					}
					return nil
				})
				out = append(out, el)
			}
			return nil
		})
	}
	return out, ad.Err()
}

// dataValue returns the NFTA_DATA_VALUE of nested data attributes.
func dataValue(b []byte) []byte {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_DATA_VALUE {
			return slices.Clone(ad.Bytes())
		}
	}
	return nil
}

// verdictOfData returns the chain of an NFTA_DATA_VERDICT, or "".
func verdictOfData(b []byte) string {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_DATA_VERDICT {
			return VerdictChain(ad.Bytes())
		}
	}
	return ""
}
