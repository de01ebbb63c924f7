// Package scantest checks a plain decoder (pkg/jsonscan) against the type
// encoding/json decodes the same document into.
package scantest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/jsonscan"
)

// Keys returns the JSON keys encoding/json decodes into a struct type:
// exported fields by their tag or name (a tag of "-" drops the field, "-,"
// names it "-"), then the keys of embedded structs, or pointers to them,
// that no outer field has taken (the outer field wins a key).
func Keys(t reflect.Type) []string {
	var keys, embedded []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case tag == "-":
		case f.Anonymous && name == "" && typ.Kind() == reflect.Struct:
			embedded = append(embedded, Keys(typ)...)
		case !f.IsExported():
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
	if err := Diff(typ, plain...); err != nil {
		t.Fatal(err)
	}
}

// SameFields fails t unless the field table, with the key lists in more
// (an embedded type's keys, read by a table of its own), holds exactly the
// keys of typ, each bound to a kind jsonscan takes.
func SameFields(t *testing.T, typ reflect.Type, fields []jsonscan.Field, more ...[]string) {
	t.Helper()
	for _, f := range fields {
		if !jsonscan.Takes(f.Into) {
			t.Fatalf("the plain decoder of %v binds %q to a %T, which jsonscan does not take", typ, f.Key, f.Into)
		}
	}
	SameKeys(t, typ, append(more, jsonscan.Keys(fields))...)
}

// Diff is SameKeys' check: nil when the lists in plain hold together
// exactly the keys of typ, else an error naming both sets.
func Diff(typ reflect.Type, plain ...[]string) error {
	want := Keys(typ)
	var got []string
	for _, p := range plain {
		got = append(got, p...)
	}
	slices.Sort(want)
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("the plain decoder of %v reads keys %q; encoding/json reads %q", typ, got, want)
	}
	return nil
}
