// Package mutate is the fuzzer's mutation engine: it changes a base
// configuration on its JSON tree (keys dropped, values of another type,
// odd numbers and strings, duplicate keys, deep nesting, ...) or on its
// bytes, and refuses inputs that could reach outside the sandbox (Unsafe).
// Its choices depend only on the random source it is given.
package mutate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"cnisuite/test/fuzz/jsontree"
)

// treeMutation changes the tree at *root and describes what it did.
type treeMutation func(r *rand.Rand, root *any) string

// mutation is a tree mutation, its name and how often it is drawn.
type mutation struct {
	weight int
	name   string
	fn     treeMutation
}

// treeMutations are drawn with these weights.
var treeMutations = []mutation{
	{6, "drop", mutDrop},
	{5, "null", mutNull},
	{6, "retype", mutRetype},
	{6, "number", mutNumber},
	{6, "string", mutString},
	{3, "duplicate-key", mutDupKey},
	{6, "list-element", mutListElem},
	{3, "interface-index", mutInterfaceIndex},
	{2, "deep-nesting", mutDeep},
	{3, "cniVersion", mutVersion},
	{3, "unknown-key", mutUnknownKey},
	{4, "transplant", mutTransplant},
}

// Mutate applies one to four mutations to a copy of the tree and
// serializes it; some inputs then get their bytes flipped. It returns the
// text, what was done, in order, and why the text must not be run ("" when
// it is safe: see Unsafe).
func Mutate(r *rand.Rand, base any) (text []byte, done []string, unsafe string) {
	root := jsontree.Clone(base)
	n := []int{1, 1, 1, 1, 1, 2, 2, 2, 3, 4}[r.IntN(10)]
	for range n {
		m := pickMutation(r)
		done = append(done, m.name+": "+m.fn(r, &root))
	}
	text = jsontree.Marshal(root)
	if r.IntN(6) != 0 {
		return text, done, unsafeTree(root, 0, "")
	}
	text, what := flipBytes(r, text)
	return text, append(done, "bytes: "+what), Unsafe(text)
}

// Kinds names the tree mutations, as Mutate's descriptions of them start.
func Kinds() []string {
	var out []string
	for _, m := range treeMutations {
		out = append(out, m.name)
	}
	return out
}

// pickMutation draws a tree mutation by weight.
func pickMutation(r *rand.Rand) mutation {
	total := 0
	for _, m := range treeMutations {
		total += m.weight
	}
	x := r.IntN(total)
	for _, m := range treeMutations {
		if x < m.weight {
			return m
		}
		x -= m.weight
	}
	panic("unreachable")
}

// pick returns a random slot, the root only rarely.
func pick(r *rand.Rand, root *any) slot {
	all := slots(root)
	if len(all) > 1 && r.IntN(50) != 0 {
		all = all[1:]
	}
	return all[r.IntN(len(all))]
}

// mutDrop removes a field or an item.
func mutDrop(r *rand.Rand, root *any) string {
	s := pick(r, root)
	s.remove()
	return s.path
}

// mutNull sets a value to null.
func mutNull(r *rand.Rand, root *any) string {
	s := pick(r, root)
	s.set(nil)
	return s.path
}

// mutRetype sets a value to one of another JSON type.
func mutRetype(r *rand.Rand, root *any) string {
	s := pick(r, root)
	v := otherType(r, s.get())
	s.set(v)
	return fmt.Sprintf("%s = %s", s.path, jsontree.Short(v))
}

// mutNumber sets a value to an odd number.
func mutNumber(r *rand.Rand, root *any) string {
	s := pick(r, root)
	v := oddNumber(r)
	s.set(v)
	return fmt.Sprintf("%s = %s", s.path, v)
}

// mutString sets a value to an odd string.
func mutString(r *rand.Rand, root *any) string {
	s := pick(r, root)
	v := oddString(r)
	s.set(v)
	return fmt.Sprintf("%s = %s", s.path, jsontree.Short(v))
}

// mutDupKey repeats a field of some object, before or after itself, with
// an odd value, so that the decoder's choice between the two matters.
func mutDupKey(r *rand.Rand, root *any) string {
	var fields []slot
	for _, s := range slots(root) {
		if s.obj != nil {
			fields = append(fields, s)
		}
	}
	if len(fields) == 0 {
		return "no object"
	}
	s := fields[r.IntN(len(fields))]
	f := jsontree.Field{Key: s.obj.Fields[s.field].Key, Value: otherValue(r, s.get())}
	at := s.field + r.IntN(2)
	s.obj.Fields = append(s.obj.Fields[:at], append([]jsontree.Field{f}, s.obj.Fields[at:]...)...)
	return fmt.Sprintf("%s twice, other = %s", s.path, jsontree.Short(f.Value))
}

// otherValue is a same-typed sibling value or a value of another type.
func otherValue(r *rand.Rand, v any) any {
	if r.IntN(2) == 0 {
		return otherType(r, v)
	}
	switch x := v.(type) {
	case string:
		return oddString(r)
	case bool:
		return !x
	}
	return oddNumber(r)
}

// mutListElem replaces, adds or repeats an element of some list, or empties
// it.
func mutListElem(r *rand.Rand, root *any) string {
	var lists []slot
	for _, s := range slots(root) {
		if _, ok := s.get().(*jsontree.Array); ok {
			lists = append(lists, s)
		}
	}
	if len(lists) == 0 {
		return "no list"
	}
	s := lists[r.IntN(len(lists))]
	a := s.get().(*jsontree.Array)
	elem := []any{nil, oddNumber(r), jsontree.Obj(), oddString(r), jsontree.Arr(), jsontree.Obj("x", nil)}[r.IntN(6)]
	switch k := r.IntN(5); {
	case k == 0 || len(a.Items) == 0:
		a.Items = append(a.Items, elem)
		return fmt.Sprintf("%s + %s", s.path, jsontree.Short(elem))
	case k == 1:
		a.Items = a.Items[:0]
		return s.path + " = []"
	case k == 2:
		n := []int{2, 10, 100}[r.IntN(3)]
		for range n {
			a.Items = append(a.Items, jsontree.Clone(a.Items[0]))
		}
		return fmt.Sprintf("%s[0] repeated %d times", s.path, n)
	default:
		i := r.IntN(len(a.Items))
		a.Items[i] = elem
		return fmt.Sprintf("%s[%d] = %s", s.path, i, jsontree.Short(elem))
	}
}

// mutInterfaceIndex points the interface index of some address of a
// (prev)result out of range, or at the wrong type.
func mutInterfaceIndex(r *rand.Rand, root *any) string {
	var ips []*jsontree.Object
	for _, s := range slots(root) {
		if o, ok := s.get().(*jsontree.Object); ok && s.arr != nil && strings.HasSuffix(trimIndex(s.path), ".ips") {
			ips = append(ips, o)
		}
	}
	if len(ips) == 0 {
		return "no ips"
	}
	o := ips[r.IntN(len(ips))]
	v := []any{-1, 3, 4, 99, json.Number("2147483648"), "2", 1.5, nil, json9}[r.IntN(9)]
	o.Set("interface", v)
	return fmt.Sprintf("an ips element's interface = %s", jsontree.Short(jsontree.Norm(v)))
}

// json9 is an index far past any interface list, beyond int64.
const json9 = 1e19

// trimIndex drops a trailing [n] from a path.
func trimIndex(p string) string {
	if i := strings.LastIndexByte(p, '['); i >= 0 && strings.HasSuffix(p, "]") {
		return p[:i]
	}
	return p
}

// mutDeep replaces a value by a deeply nested one.
func mutDeep(r *rand.Rand, root *any) string {
	s := pick(r, root)
	d := []int{64, 1000, 10001, 20000}[r.IntN(4)]
	s.set(deep(r, d))
	return fmt.Sprintf("%s nested %d deep", s.path, d)
}

// mutVersion sets the configuration's (or the prevResult's) cniVersion.
func mutVersion(r *rand.Rand, root *any) string {
	v := wrongVersions[r.IntN(len(wrongVersions))]
	targets := find(root, "$.cniVersion", "$.prevResult.cniVersion")
	if len(targets) == 0 {
		return "no cniVersion"
	}
	s := targets[r.IntN(len(targets))]
	s.set(v)
	return fmt.Sprintf("%s = %q", s.path, v)
}

// mutUnknownKey adds a key the plugin does not know, or a known key in
// another letter case (encoding/json matches keys case-insensitively).
func mutUnknownKey(r *rand.Rand, root *any) string {
	var objs []slot
	for _, s := range slots(root) {
		if _, ok := s.get().(*jsontree.Object); ok {
			objs = append(objs, s)
		}
	}
	if len(objs) == 0 {
		return "no object"
	}
	s := objs[r.IntN(len(objs))]
	o := s.get().(*jsontree.Object)
	key := oddString(r)
	var v any = otherType(r, nil)
	if len(o.Fields) > 0 && r.IntN(2) == 0 {
		f := o.Fields[r.IntN(len(o.Fields))]
		key, v = flipCase(f.Key), otherValue(r, f.Value)
	}
	o.Fields = append(o.Fields, jsontree.Field{Key: key, Value: v})
	return fmt.Sprintf("%s.%s = %s", s.path, jsontree.PathKey(key), jsontree.Short(v))
}

// flipCase turns a key to upper case, or to lower case when it has none.
func flipCase(s string) string {
	if s == strings.ToLower(s) {
		return strings.ToUpper(s)
	}
	return strings.ToLower(s)
}

// mutTransplant copies one value of the tree into another place, so that
// realistic values meet the wrong keys.
func mutTransplant(r *rand.Rand, root *any) string {
	from := pick(r, root)
	v := jsontree.Clone(from.get())
	to := pick(r, root)
	to.set(v)
	return fmt.Sprintf("%s = value of %s", to.path, from.path)
}
