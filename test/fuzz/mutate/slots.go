package fuzz

import (
	"fmt"
	"strconv"
)

// slot is one place in a tree that holds a value: a field of an object, an
// item of an array, or the root.
type slot struct {
	path  string
	obj   *Object
	field int
	arr   *Array
	item  int
	root  *any
	depth int
}

func (s slot) get() any {
	switch {
	case s.obj != nil:
		return s.obj.Fields[s.field].Value
	case s.arr != nil:
		return s.arr.Items[s.item]
	}
	return *s.root
}

func (s slot) set(v any) {
	v = norm(v)
	switch {
	case s.obj != nil:
		s.obj.Fields[s.field].Value = v
	case s.arr != nil:
		s.arr.Items[s.item] = v
	default:
		*s.root = v
	}
}

// remove drops the field or item; the root cannot be removed and becomes
// null instead.
func (s slot) remove() {
	switch {
	case s.obj != nil:
		s.obj.Fields = append(s.obj.Fields[:s.field], s.obj.Fields[s.field+1:]...)
	case s.arr != nil:
		s.arr.Items = append(s.arr.Items[:s.item], s.arr.Items[s.item+1:]...)
	default:
		*s.root = nil
	}
}

// slots lists every place of the tree rooted at *root, root first, in
// document order.
func slots(root *any) []slot {
	out := []slot{{path: "$", root: root}}
	return walkSlots(*root, "$", 1, out)
}

// maxSlotDepth stops the walk inside deeply nested values: listing every
// level of a 100,000-deep value would take memory quadratic in its depth.
const maxSlotDepth = 32

func walkSlots(v any, path string, depth int, out []slot) []slot {
	if depth > maxSlotDepth {
		return out
	}
	switch x := v.(type) {
	case *Object:
		for i, f := range x.Fields {
			p := path + "." + pathKey(f.Key)
			out = append(out, slot{path: p, obj: x, field: i, depth: depth})
			out = walkSlots(f.Value, p, depth+1, out)
		}
	case *Array:
		for i, it := range x.Items {
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, slot{path: p, arr: x, item: i, depth: depth})
			out = walkSlots(it, p, depth+1, out)
		}
	}
	return out
}

// pathKey spells a key in a path: bare when it is a plain word, quoted
// otherwise, cut after 40 bytes.
func pathKey(k string) string {
	if len(k) > 40 {
		return strconv.Quote(k[:40]) + fmt.Sprintf("…(%d bytes)", len(k))
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// find returns the slots whose path is exactly one of paths.
func find(root *any, paths ...string) []slot {
	var out []slot
	for _, s := range slots(root) {
		for _, p := range paths {
			if s.path == p {
				out = append(out, s)
			}
		}
	}
	return out
}
