package mutate

import (
	"fmt"

	"cnisuite/test/fuzz/jsontree"
)

// slot is one place in a tree that holds a value: a field of an object, an
// item of an array, or the root.
type slot struct {
	path  string
	obj   *jsontree.Object
	field int
	arr   *jsontree.Array
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
	v = jsontree.Norm(v)
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

// Drop returns a copy of tree without its place i, counted as the
// mutations count places (root first, in document order; a dropped root
// becomes null), and false when the tree has no place i: the fuzzer's
// minimizer drops them one at a time.
func Drop(tree any, i int) (any, bool) {
	c := jsontree.Clone(tree)
	all := slots(&c)
	if i >= len(all) {
		return nil, false
	}
	all[i].remove()
	return c, true
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
	case *jsontree.Object:
		for i, f := range x.Fields {
			p := path + "." + jsontree.PathKey(f.Key)
			out = append(out, slot{path: p, obj: x, field: i, depth: depth})
			out = walkSlots(f.Value, p, depth+1, out)
		}
	case *jsontree.Array:
		for i, it := range x.Items {
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, slot{path: p, arr: x, item: i, depth: depth})
			out = walkSlots(it, p, depth+1, out)
		}
	}
	return out
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
