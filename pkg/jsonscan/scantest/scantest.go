// Package scantest checks a plain decoder (pkg/jsonscan) against the type
// encoding/json decodes the same document into.
package scantest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Keys returns the JSON keys encoding/json decodes into a struct type:
// exported fields by their tag or name, then the keys of embedded structs
// that no outer field has taken (the outer field wins a key).
func Keys(t reflect.Type) []string {
	var keys, embedded []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			embedded = append(embedded, Keys(f.Type)...)
		case name == "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	for _, k := range embedded {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// SameKeys fails t unless the lists in plain hold together exactly the
// keys of typ.
func SameKeys(t *testing.T, typ reflect.Type, plain ...[]string) {
	t.Helper()
	want := Keys(typ)
	var got []string
	for _, p := range plain {
		got = append(got, p...)
	}
	slices.Sort(want)
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the plain decoder of %v reads keys %q; encoding/json reads %q", typ, got, want)
	}
}
