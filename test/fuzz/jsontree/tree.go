// Package jsontree is the fuzzer's JSON tree: parsed and written back
// keeping what encoding/json's map[string]any would lose (the order of
// keys, duplicate keys, exact numbers), with the few helpers every part of
// the fuzzer uses to name a place or a value in messages.
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A JSON tree keeps what encoding/json's map[string]any would lose and a
// fuzzer needs: the order of keys, duplicate keys and exact numbers. Its
// values are nil, bool, json.Number, string, *Array and *Object.

// Object is a JSON object whose fields keep their order; a key may repeat.
type Object struct {
	Fields []Field
}

// Field is one key and its value.
type Field struct {
	Key   string
	Value any
}

// Array is a JSON array.
type Array struct {
	Items []any
}

// Obj builds an object from alternating keys and values.
func Obj(kv ...any) *Object {
	o := &Object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Fields = append(o.Fields, Field{Key: kv[i].(string), Value: Norm(kv[i+1])})
	}
	return o
}

// Arr builds an array.
func Arr(items ...any) *Array {
	a := &Array{}
	for _, it := range items {
		a.Items = append(a.Items, Norm(it))
	}
	return a
}

// Norm turns Go ints into json.Number so that builders can use literals.
func Norm(v any) any {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	}
	return v
}

// Get returns the value of the last field named key, as encoding/json
// would use it.
func (o *Object) Get(key string) (any, bool) {
	for i := len(o.Fields) - 1; i >= 0; i-- {
		if o.Fields[i].Key == key {
			return o.Fields[i].Value, true
		}
	}
	return nil, false
}

// Without returns o without its fields named key.
func (o *Object) Without(key string) *Object {
	out := &Object{}
	for _, f := range o.Fields {
		if f.Key != key {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// Set replaces the value of every field named key, or appends one.
func (o *Object) Set(key string, v any) {
	found := false
	for i := range o.Fields {
		if o.Fields[i].Key == key {
			o.Fields[i].Value, found = Norm(v), true
		}
	}
	if !found {
		o.Fields = append(o.Fields, Field{Key: key, Value: Norm(v)})
	}
}

// Parse reads one JSON value into a tree. Numbers stay json.Number.
func Parse(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return parseObject(dec)
		case '[':
			return parseArray(dec)
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

func parseObject(dec *json.Decoder) (any, error) {
	o := &Object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		v, err := parseValue(dec)
		if err != nil {
			return nil, err
		}
		o.Fields = append(o.Fields, Field{Key: key, Value: v})
	}
	_, err := dec.Token() // the closing brace
	return o, err
}

func parseArray(dec *json.Decoder) (any, error) {
	a := &Array{Items: []any{}}
	for dec.More() {
		v, err := parseValue(dec)
		if err != nil {
			return nil, err
		}
		a.Items = append(a.Items, v)
	}
	_, err := dec.Token() // the closing bracket
	return a, err
}

// Marshal writes a tree as compact JSON, keys in their order, duplicates
// kept.
func Marshal(v any) []byte {
	var b bytes.Buffer
	writeValue(&b, v)
	return b.Bytes()
}

func writeValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(string(x))
	case string:
		writeString(b, x)
	case *Array:
		b.WriteByte('[')
		for i, it := range x.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, it)
		}
		b.WriteByte(']')
	case *Object:
		b.WriteByte('{')
		for i, f := range x.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, f.Key)
			b.WriteByte(':')
			writeValue(b, f.Value)
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("fuzz: a %T in a JSON tree", v))
	}
}

func writeString(b *bytes.Buffer, s string) {
	if plainASCII(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	out, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		panic(err)
	}
	b.Write(out)
}

// plainASCII reports whether s needs no escaping in JSON (encoding/json
// would escape <, > and &, which need none).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of a tree.
func Clone(v any) any {
	switch x := v.(type) {
	case *Array:
		c := &Array{Items: make([]any, len(x.Items))}
		for i, it := range x.Items {
			c.Items[i] = Clone(it)
		}
		return c
	case *Object:
		c := &Object{Fields: make([]Field, len(x.Fields))}
		for i, f := range x.Fields {
			c.Fields[i] = Field{Key: f.Key, Value: Clone(f.Value)}
		}
		return c
	}
	return v
}

// PathKey spells a key in a path: bare when it is a plain word, quoted
// otherwise, cut after 40 bytes.
func PathKey(k string) string {
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

// TypeName names the JSON type of a tree value.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case *Array:
		return "array"
	}
	return "object"
}

// Short describes a value in at most 60 bytes.
func Short(v any) string {
	s := string(Marshal(v))
	if len(s) > 60 {
		return fmt.Sprintf("%s… (%d bytes)", s[:60], len(s))
	}
	return s
}
