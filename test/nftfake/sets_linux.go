package nftfake

import (
	"bytes"
	"slices"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// add set / add map: an existing named set is kept if it is the same
// (NLM_F_EXCL: EEXIST), and refused (EEXIST) if it differs.
func (tx *txn) newSet(family byte, flags netlink.HeaderFlags, a attrs) error {
	t, err := tx.rs.tableOf(family, a, unix.NFTA_SET_TABLE)
	if err != nil {
		return err
	}
	n, err := name(a, unix.NFTA_SET_NAME)
	if err != nil {
		return err
	}
	s, err := parseSet(a)
	if err != nil {
		return err
	}
	s.name = setName(t, n)
	if old := t.set(s.name); old != nil {
		if flags&netlink.Excl != 0 || !sameSet(old, s) {
			return unix.EEXIST
		}
		return nil
	}
	t.hgen++
	s.handle = t.hgen
	t.sets = append(t.sets, s)
	if id, ok := a.u32(unix.NFTA_SET_ID); ok {
		tx.ids[id] = s
	}
	return nil
}

// parseSet reads a set's flags, key and data as the kernel checks them.
func parseSet(a attrs) (*set, error) {
	s := &set{userdata: a[unix.NFTA_SET_USERDATA]}
	s.flags, _ = a.u32(unix.NFTA_SET_FLAGS)
	s.keyType, _ = a.u32(unix.NFTA_SET_KEY_TYPE)
	s.keyLen, _ = a.u32(unix.NFTA_SET_KEY_LEN)
	s.anonymous, s.constant = s.flags&anonymousFlag != 0, s.flags&constantFlag != 0
	if s.keyLen == 0 || s.keyLen > maxData {
		return nil, unix.EINVAL
	}
	dataType, hasData := a.u32(unix.NFTA_SET_DATA_TYPE)
	switch {
	case hasData != s.isMap():
		return nil, unix.EINVAL
	case hasData && dataType == verdictType:
		s.dataType, s.dataLen = dataType, 16 // sizeof(struct nft_verdict)
	case hasData:
		s.dataType, _ = a.u32(unix.NFTA_SET_DATA_TYPE)
		s.dataLen, _ = a.u32(unix.NFTA_SET_DATA_LEN)
		if s.dataLen == 0 || s.dataLen > maxData {
			return nil, unix.EINVAL
		}
	}
	if desc, ok := a[unix.NFTA_SET_DESC]; ok {
		lens, err := fieldLens(desc)
		if err != nil {
			return nil, err
		}
		s.fieldLens = lens
	}
	if s.concat() && !validConcat(s) {
		return nil, unix.EINVAL
	}
	return s, nil
}

// fieldLens reads the field lengths of a set's concatenation description.
func fieldLens(desc []byte) ([]uint32, error) {
	d, err := parseAttrs(desc)
	if err != nil {
		return nil, err
	}
	raw, ok := d[2] // NFTA_SET_DESC_CONCAT
	if !ok {
		return nil, nil
	}
	fields, err := list(raw)
	if err != nil {
		return nil, err
	}
	var out []uint32
	for _, f := range fields {
		fa, err := parseAttrs(f)
		if err != nil {
			return nil, err
		}
		l, ok := fa.u32(1) // NFTA_SET_FIELD_LEN
		if !ok {
			return nil, unix.EINVAL
		}
		out = append(out, l)
	}
	return out, nil
}

// validConcat reports whether a concatenation's fields, each padded to
// four bytes, make up its key, as an interval set needs.
func validConcat(s *set) bool {
	var sum uint32
	for _, l := range s.fieldLens {
		sum += (l + 3) &^ 3
	}
	return s.interval() && len(s.fieldLens) > 1 && sum == s.keyLen
}

func sameSet(a, b *set) bool {
	return a.keyType == b.keyType && a.keyLen == b.keyLen && a.flags == b.flags &&
		a.dataType == b.dataType && a.dataLen == b.dataLen && slices.Equal(a.fieldLens, b.fieldLens)
}

// setElems adds (add) or deletes the elements of one message.
func (tx *txn) setElems(family byte, flags netlink.HeaderFlags, a attrs, add bool) error {
	t, err := tx.rs.tableOf(family, a, unix.NFTA_SET_ELEM_LIST_TABLE)
	if err != nil {
		return err
	}
	s, err := tx.setOf(t, a, unix.NFTA_SET_ELEM_LIST_SET, unix.NFTA_SET_ELEM_LIST_SET_ID)
	if err != nil {
		return err
	}
	if (s.anonymous || s.constant) && t.bound(s.name) {
		return unix.EBUSY
	}
	raw, ok := a[unix.NFTA_SET_ELEM_LIST_ELEMENTS]
	if !ok {
		return unix.EINVAL
	}
	elems, err := list(raw)
	if err != nil {
		return err
	}
	for _, b := range elems {
		e, err := parseElem(t, s, b, add)
		if err == nil && add {
			err = s.insert(e, flags&netlink.Excl != 0)
		} else if err == nil {
			err = s.remove(e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseElem reads an element as the kernel checks it: a key (and key
// end) of the set's key length, data of a map's kind and length (only
// when adding), a verdict's chain that exists.
func parseElem(t *table, s *set, b []byte, add bool) (elem, error) {
	a, err := parseAttrs(b)
	if err != nil {
		return elem{}, err
	}
	var e elem
	e.flags, _ = a.u32(unix.NFTA_SET_ELEM_FLAGS)
	e.userdata = a[unix.NFTA_SET_ELEM_USERDATA]
	if e.key, err = value(a, unix.NFTA_SET_ELEM_KEY, s.keyLen); err != nil {
		return elem{}, err
	}
	if e.key == nil {
		return elem{}, unix.EINVAL
	}
	if _, ok := a[10]; ok { // NFTA_SET_ELEM_KEY_END
		if e.end, err = value(a, 10, s.keyLen); err != nil {
			return elem{}, err
		}
	}
	if !s.interval() && (e.end != nil || e.flags&unix.NFT_SET_ELEM_INTERVAL_END != 0) {
		return elem{}, unix.EINVAL
	}
	d, hasData := a[unix.NFTA_SET_ELEM_DATA]
	if !add || e.flags&unix.NFT_SET_ELEM_INTERVAL_END != 0 {
		return e, nil
	}
	switch {
	case hasData != s.isMap():
		return elem{}, unix.EINVAL
	case s.verdictMap():
		e.verdict, err = parseVerdictData(t, d)
		if err == nil && e.verdict == nil {
			err = unix.EINVAL
		}
	case hasData:
		e.data, err = value(a, unix.NFTA_SET_ELEM_DATA, s.dataLen)
	}
	return e, err
}

// value reads the NFTA_DATA_VALUE nested in attribute t, which must be
// want bytes long; nil when t is missing.
func value(a attrs, t uint16, want uint32) ([]byte, error) {
	raw, ok := a[t]
	if !ok {
		return nil, nil
	}
	d, err := parseAttrs(raw)
	if err != nil {
		return nil, err
	}
	v, ok := d[unix.NFTA_DATA_VALUE]
	if !ok || uint32(len(v)) != want {
		return nil, unix.EINVAL
	}
	return v, nil
}

// insert adds an element. One the set holds already is refused (EEXIST)
// under NLM_F_EXCL or when it maps to something else, and is otherwise
// kept as it is. In an interval set of a concatenation, an element whose
// start or end falls in another's range is refused (EEXIST), as the
// kernel's pipapo set refuses it; one whose start passes its end in a
// field is invalid.
func (s *set) insert(e elem, excl bool) error {
	i := -1
	if s.concat() {
		if !ordered(s.fieldLens, e.key, endOf(e)) {
			return unix.EINVAL
		}
		for j, x := range s.elems {
			if inRange(s.fieldLens, x, e.key) {
				if !bytes.Equal(x.key, e.key) || !bytes.Equal(endOf(x), endOf(e)) {
					return unix.EEXIST
				}
				i = j
			} else if inRange(s.fieldLens, x, endOf(e)) {
				return unix.EEXIST
			}
		}
	} else {
		i = s.find(e)
	}
	if i < 0 {
		s.elems = append(s.elems, e)
		return nil
	}
	if excl || !sameValue(s.elems[i], e) {
		return unix.EEXIST
	}
	return nil
}

// remove deletes an element: the one a get of its key finds (in an
// interval set of a concatenation, the one whose range holds the key,
// whatever end is given, as the kernel's pipapo set finds it); ENOENT if
// the set holds none.
func (s *set) remove(e elem) error {
	i := s.lookup(e)
	if i < 0 {
		return unix.ENOENT
	}
	s.elems = slices.Delete(s.elems, i, i+1)
	return nil
}

// find returns the index of the element with e's key, range end and
// interval-end flag, or -1.
func (s *set) find(e elem) int {
	return slices.IndexFunc(s.elems, func(x elem) bool {
		return bytes.Equal(x.key, e.key) && bytes.Equal(endOf(x), endOf(e)) &&
			x.flags&unix.NFT_SET_ELEM_INTERVAL_END == e.flags&unix.NFT_SET_ELEM_INTERVAL_END
	})
}

// endOf is an element's range end: its key for a single key.
func endOf(e elem) []byte {
	if e.end != nil {
		return e.end
	}
	return e.key
}

func sameValue(a, b elem) bool {
	if (a.verdict == nil) != (b.verdict == nil) {
		return false
	}
	if a.verdict != nil && *a.verdict != *b.verdict {
		return false
	}
	return bytes.Equal(a.data, b.data)
}

// fields calls fn with each field of two concatenated keys, each field
// padded to four bytes in the key.
func fields(lens []uint32, a, b []byte, fn func(x, y []byte) bool) bool {
	off := uint32(0)
	for _, l := range lens {
		if off+l > uint32(len(a)) || off+l > uint32(len(b)) || !fn(a[off:off+l], b[off:off+l]) {
			return false
		}
		off += (l + 3) &^ 3
	}
	return true
}

// ordered reports whether start is at most end in every field.
func ordered(lens []uint32, start, end []byte) bool {
	return fields(lens, start, end, func(x, y []byte) bool { return bytes.Compare(x, y) <= 0 })
}

// inRange reports whether the point p lies in x's range in every field.
func inRange(lens []uint32, x elem, p []byte) bool {
	return ordered(lens, x.key, p) && ordered(lens, p, endOf(x))
}
