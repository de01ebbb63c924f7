// Package jsonscan reads and writes the plain shapes of small JSON
// documents without reflection. A plugin process decodes and encodes a few
// documents once each, so encoding/json's per-type set-up (the field
// tables it builds on a type's first use, and its decoder's and encoder's
// own first use) costs more than the work itself: 0.7–1.25 ms of CPU per
// plugin process of a chain ADD before this package (RESULTS.md round 16).
//
// A Reader takes only the plain shapes: strings without escapes, integer
// literals, booleans, arrays, raw values other than null, and objects
// whose keys appear once and exactly as known. On anything else — an
// escape, a fraction, a null, a repeated key, a key that differs from a
// known one only in case — it stops and reports false, and the caller
// decodes the document with encoding/json, which stays the rule for what a
// document means and for every error message. An Object writes what
// json.Marshal writes, byte for byte, and likewise reports false for a
// member it leaves to json.Marshal.
package jsonscan

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reader reads one JSON document. Once a read finds a shape it does not
// take, every later read does nothing and OK reports false.
type Reader struct {
	data []byte
	pos  int
	ok   bool
}

// NewReader returns a Reader of data; OK is false at once when data is not
// valid JSON.
func NewReader(data []byte) *Reader {
	return &Reader{data: data, ok: json.Valid(data)}
}

// OK reports whether every read so far found a shape the Reader takes.
func (r *Reader) OK() bool { return r.ok }

// Fail makes OK false: the caller met a value it does not take either.
func (r *Reader) Fail() { r.ok = false }

// peek skips white space and returns the next byte, or 0 at the end.
func (r *Reader) peek() byte {
	for r.pos < len(r.data) {
		switch c := r.data[r.pos]; c {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return c
		}
	}
	return 0
}

// expect consumes c, the next byte after white space, or fails.
func (r *Reader) expect(c byte) bool {
	if !r.ok || r.peek() != c {
		r.ok = false
		return false
	}
	r.pos++
	return true
}

// String reads a string without escapes.
func (r *Reader) String() string {
	if !r.expect('"') {
		return ""
	}
	start := r.pos
	ascii := true
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			s := r.data[start:r.pos]
			r.pos++
			if !ascii && !utf8.Valid(s) {
				r.ok = false // encoding/json would replace the bad bytes
				return ""
			}
			return string(s)
		case c == '\\' || c < 0x20:
			r.ok = false
			return ""
		case c >= utf8.RuneSelf:
			ascii = false
		}
		r.pos++
	}
	r.ok = false
	return ""
}

// Int reads an integer literal that fits an int.
func (r *Reader) Int() int {
	if !r.ok {
		return 0
	}
	c := r.peek()
	if c != '-' && (c < '0' || c > '9') {
		r.ok = false
		return 0
	}
	start := r.pos
	for r.pos < len(r.data) && (r.data[r.pos] == '-' || r.data[r.pos] >= '0' && r.data[r.pos] <= '9') {
		r.pos++
	}
	if r.pos < len(r.data) && strings.IndexByte(".eE", r.data[r.pos]) >= 0 {
		r.ok = false // encoding/json refuses a fraction for an int
		return 0
	}
	n, err := strconv.Atoi(string(r.data[start:r.pos]))
	if err != nil {
		r.ok = false
	}
	return n
}

// Object reads an object whose keys are among keys, each at most once:
// member(i) reads the value of keys[i]. The values of other keys are
// skipped, unless a key matches one of keys without regard to case (which
// encoding/json would take for it).
func (r *Reader) Object(keys []string, member func(i int)) {
	r.Members(func(key string) {
		switch i := slices.Index(keys, key); {
		case i >= 0:
			member(i)
		case foldsTo(keys, key):
			r.ok = false
		default:
			r.Skip()
		}
	})
}

// A Field binds a key of an object to where its value goes. Into is one
// of *string, *int, *bool, *[]string, *json.RawMessage (Raw), the value;
// **string, **int, **bool, **[]string, a pointer to it (a key that may be
// absent); func(*Reader), a reader of its own for the value; or nil, a key
// left to encoding/json (the Reader stops on it).
type Field struct {
	Key  string
	Into any
}

// Fields reads an object into fields, by Object's rules; a key given
// twice in fields goes to the first.
func (r *Reader) Fields(fields []Field) {
	r.Object(Keys(fields), func(i int) { r.into(fields[i].Into) })
}

// Keys returns the keys of fields, in order.
func Keys(fields []Field) []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.Key
	}
	return keys
}

// Takes reports whether into is a kind a Field's Into may be (nil
// included); any other leaves its key to encoding/json without a word, so
// tests check every table with it (scantest.SameFields).
func Takes(into any) bool {
	switch into.(type) {
	case nil, *string, **string, *int, **int, *bool, **bool, *[]string, **[]string, *json.RawMessage, func(*Reader):
		return true
	}
	return false
}

// into reads the next value into dst, a Field's Into.
func (r *Reader) into(dst any) {
	switch d := dst.(type) {
	case *string:
		*d = r.String()
	case **string:
		*d = ptr(r.String())
	case *int:
		*d = r.Int()
	case **int:
		*d = ptr(r.Int())
	case *bool:
		*d = r.Bool()
	case **bool:
		*d = ptr(r.Bool())
	case *[]string:
		*d = r.Strings()
	case **[]string:
		*d = ptr(r.Strings())
	case *json.RawMessage:
		*d = r.Raw()
	case func(*Reader):
		d(r)
	default: // nil: encoding/json's
		r.ok = false
	}
}

func ptr[T any](v T) *T { return &v }

// Members reads an object of any keys: member(key) reads the value of key.
// A key given twice stops the Reader (encoding/json keeps the last value
// of a map key, and merges repeated objects into one struct).
func (r *Reader) Members(member func(key string)) {
	if !r.expect('{') {
		return
	}
	var seen map[string]bool
	for first := true; r.ok; first = false {
		if r.peek() == '}' {
			r.pos++
			return
		}
		if !first && !r.expect(',') {
			return
		}
		key := r.String()
		if !r.expect(':') || seen[key] {
			r.ok = false
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[key] = true
		member(key)
	}
}

// Bool reads true or false.
func (r *Reader) Bool() bool {
	if !r.ok {
		return false
	}
	switch r.peek() { // the document is valid: t starts true, f false
	case 't':
		r.pos += len("true")
		return true
	case 'f':
		r.pos += len("false")
		return false
	}
	r.ok = false
	return false
}

// Raw returns a copy of the next value as it stands, null excepted (which
// encoding/json treats apart).
func (r *Reader) Raw() []byte {
	if !r.ok || r.peek() == 'n' {
		r.ok = false
		return nil
	}
	start := r.pos
	r.Skip()
	return append([]byte(nil), r.data[start:r.pos]...)
}

// Array reads an array: elem reads each element.
func (r *Reader) Array(elem func()) {
	if !r.expect('[') {
		return
	}
	for first := true; r.ok; first = false {
		if r.peek() == ']' {
			r.pos++
			return
		}
		if !first && !r.expect(',') {
			return
		}
		elem()
	}
}

// Strings reads an array of strings; [] is an empty list, not nil, as
// encoding/json reads it.
func (r *Reader) Strings() []string {
	out := []string{}
	r.Array(func() { out = append(out, r.String()) })
	return out
}

// Skip passes over one value of the (valid) document.
func (r *Reader) Skip() {
	if !r.ok || r.peek() == 0 {
		return
	}
	depth := 0
	for r.pos < len(r.data) {
		switch c := r.data[r.pos]; c {
		case '"':
			r.skipString()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		r.pos++
		if depth == 0 && r.scalarEnded() {
			return
		}
	}
}

// scalarEnded reports whether the bytes read since a value began end it:
// the next byte is a delimiter or white space.
func (r *Reader) scalarEnded() bool {
	if r.pos >= len(r.data) {
		return true
	}
	return strings.IndexByte(",}] \t\n\r", r.data[r.pos]) >= 0
}

// skipString passes over a string, escapes included.
func (r *Reader) skipString() {
	for r.pos++; r.pos < len(r.data); r.pos++ {
		switch r.data[r.pos] {
		case '\\':
			r.pos++
		case '"':
			r.pos++
			return
		}
	}
}

// foldsTo reports whether encoding/json could match key to one of keys by
// its case-insensitive rule; a key beyond ASCII is taken as a match, to be
// safe (some letters fold onto ASCII ones, as K, the Kelvin sign, onto k).
func foldsTo(keys []string, key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return true
		}
	}
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// AppendString appends s as a JSON string, byte for byte as encoding/json
// writes it (which also escapes <, > and &).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || strings.IndexByte(`"\<>&`, c) >= 0 {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
