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
// exported fields by their tag or name, embedded structs' keys folded in.
func Keys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			keys = append(keys, Keys(f.Type)...)
		case name == "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	return keys
}

// SameKeys fails t unless plain lists exactly the keys of typ.
func SameKeys(t *testing.T, typ reflect.Type, plain ...[]string) {
	t.Helper()
	want := Keys(typ)
	var got []string
	for _, p := range plain {
		got = append(got, p...)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the plain decoder of %v reads keys %q; encoding/json reads %q", typ, got, want)
	}
}
