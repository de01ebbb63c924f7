package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Object writes a JSON object member by member, byte for byte as
// encoding/json's Marshal writes a struct with the same keys in the same
// order; the Opt methods leave out what omitempty leaves out.
type Object struct {
	b   []byte
	n   int
	bad bool
}

// NewObject begins an object at the end of b.
func NewObject(b []byte) *Object {
	return &Object{b: append(b, '{')}
}

// Key begins a member; its value is appended by the caller (AppendValue).
func (o *Object) Key(key string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(AppendString(o.b, key), ':')
}

// AppendValue appends a value written by f after Key.
func (o *Object) AppendValue(f func(b []byte) []byte) { o.b = f(o.b) }

// String writes a string member.
func (o *Object) String(key, s string) {
	o.Key(key)
	o.b = AppendString(o.b, s)
}

// OptString writes a string member unless s is empty.
func (o *Object) OptString(key, s string) {
	if s != "" {
		o.String(key, s)
	}
}

// OptInt writes an integer member unless n is 0.
func (o *Object) OptInt(key string, n int) {
	if n != 0 {
		o.Key(key)
		o.b = strconv.AppendInt(o.b, int64(n), 10)
	}
}

// IntPtr writes an integer member unless p is nil.
func (o *Object) IntPtr(key string, p *int) {
	if p != nil {
		o.Key(key)
		o.b = strconv.AppendInt(o.b, int64(*p), 10)
	}
}

// BoolPtr writes a boolean member unless p is nil.
func (o *Object) BoolPtr(key string, p *bool) {
	if p != nil {
		o.Key(key)
		o.b = strconv.AppendBool(o.b, *p)
	}
}

// OptStrings writes a list of strings unless it is empty.
func (o *Object) OptStrings(key string, list []string) {
	if len(list) == 0 {
		return
	}
	o.Key(key)
	o.b = append(o.b, '[')
	for i, s := range list {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = AppendString(o.b, s)
	}
	o.b = append(o.b, ']')
}

// List writes a list member of n elements unless n is 0; elem appends the
// i-th, or reports false for one encoding/json must write itself.
func (o *Object) List(key string, n int, elem func(b []byte, i int) ([]byte, bool)) {
	if n == 0 {
		return
	}
	o.Key(key)
	o.b = append(o.b, '[')
	for i := range n {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		var ok bool
		if o.b, ok = elem(o.b, i); !ok {
			o.bad = true
		}
	}
	o.b = append(o.b, ']')
}

// Raw writes a json.RawMessage member as encoding/json does: compacted,
// with <, > and & escaped, null when nil. Invalid JSON makes Close fail,
// as it fails Marshal.
func (o *Object) Raw(key string, raw json.RawMessage) {
	o.Key(key)
	if raw == nil {
		o.b = append(o.b, "null"...)
		return
	}
	var c, e bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		o.bad = true
		return
	}
	json.HTMLEscape(&e, c.Bytes())
	o.b = append(o.b, e.Bytes()...)
}

// OptRaw writes a json.RawMessage member unless it is empty.
func (o *Object) OptRaw(key string, raw json.RawMessage) {
	if len(raw) > 0 {
		o.Raw(key, raw)
	}
}

// Fail makes Close report false: the caller met a value encoding/json
// must write (or refuse) itself.
func (o *Object) Fail() { o.bad = true }

// Close ends the object and returns it, or false when a member failed.
func (o *Object) Close() ([]byte, bool) {
	return append(o.b, '}'), !o.bad
}
