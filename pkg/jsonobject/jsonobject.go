// Package jsonobject reads and writes the JSON objects of a configuration
// whose keys keep their order and may not repeat (tuning's "sysctl" and
// "features"), and merges such ordered lists key by key.
package jsonobject

import (
	"bytes"
	"encoding/json"
	"slices"

	"cnisuite/pkg/types"
)

// Decode reads a JSON object member by member, in order, for the
// keys whose order and duplicates matter ("sysctl", "features"): member
// gets each key and its raw value; a key given twice is refused. It
// reports false for a JSON null. what names the key in messages and want
// describes the object expected ("a JSON object of strings").
func Decode(data []byte, what, want string, member func(key string, raw json.RawMessage) error) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	if tok == nil {
		return false, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, types.Errorf(types.ErrInvalidConfig, "%s: want %s, got %s", what, want, kind(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false, err
		}
		key, _ := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false, err
		}
		if err := member(key, raw); err != nil {
			return false, err
		}
		if seen[key] {
			return false, types.Errorf(types.ErrInvalidConfig, "%s: key %q given twice: duplicated %s keys are not allowed", what, key, what)
		}
		seen[key] = true
	}
	return true, nil
}

// Encode writes n members as a JSON object, in order; member
// returns the i-th key and value.
func Encode(n int, member func(i int) (string, any)) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		key, value := member(i)
		k, _ := json.Marshal(key) // marshalling a string cannot fail
		v, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MergeByKey returns base with the items of over added, an item of over
// replacing in place the item of base with the same key.
func MergeByKey[T any](base, over []T, key func(T) string) []T {
	out := append([]T{}, base...)
	for _, o := range over {
		if i := slices.IndexFunc(out, func(b T) bool { return key(b) == key(o) }); i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

// kind names the JSON type a token starts, for messages.
func kind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}
