package types

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeJSON unmarshals data into v, then refuses what encoding/json lets
// through silently and plugins would trip over later: a null where a list
// element or map value must be an object (`"interfaces": [null]` leaves a nil
// pointer in the list). Errors name the JSON path below root, as in
// "prevResult.interfaces[0]", and wrap ErrDecoding.
//
// Every decoder of configuration and result in the suite goes through here,
// so the check is made once, not plugin by plugin.
func decodeJSON(data []byte, v any, root string) error {
	if err := json.Unmarshal(data, v); err != nil {
		return Errorf(ErrDecoding, "%s", describeJSONError(err, root))
	}
	if err := findNilElement(reflect.ValueOf(v), root); err != nil {
		return Errorf(ErrDecoding, "%w", err)
	}
	return nil
}

// describeJSONError rewrites encoding/json's errors, which speak of Go
// types, in the words of the JSON document: where, what was found, what
// was expected.
func describeJSONError(err error, root string) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("%s: a JSON %s where %s was expected",
			joinPath(root, typeErr.Field), typeErr.Value, jsonKind(typeErr.Type))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%s: invalid JSON at byte %d: %v", orDocument(root), syntaxErr.Offset, err)
	default:
		return fmt.Sprintf("%s: %v", orDocument(root), err)
	}
}

// jsonKind names the JSON kind a Go type is read from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string"
		}
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of type " + t.String()
}

// findNilElement walks a decoded value and reports the first list element
// or map value that is a nil pointer, that is, a JSON null where an object
// belongs. A nil pointer in a struct field is an absent optional key and
// is fine.
func findNilElement(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return findNilElement(v.Elem(), path)
	case reflect.Struct:
		return findNilInStruct(v, path)
	case reflect.Slice, reflect.Array:
		if !mayHoldPointers(v.Type().Elem()) {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if err := checkElement(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if !mayHoldPointers(v.Type().Elem()) {
			return nil
		}
		iter := v.MapRange()
		for iter.Next() {
			if err := checkElement(iter.Value(), joinPath(path, fmt.Sprint(iter.Key()))); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkElement refuses a nil pointer as a list element or map value, then
// looks inside the element.
func checkElement(e reflect.Value, path string) error {
	if e.Kind() == reflect.Pointer && e.IsNil() {
		return fmt.Errorf("%s: null where %s was expected", path, jsonKind(e.Type()))
	}
	return findNilElement(e, path)
}

func findNilInStruct(v reflect.Value, path string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || !mayHoldPointers(f.Type) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fieldPath := path
		if !f.Anonymous || name != "" {
			if name == "" {
				name = f.Name
			}
			fieldPath = joinPath(path, name)
		}
		if err := findNilElement(v.Field(i), fieldPath); err != nil {
			return err
		}
	}
	return nil
}

// mayHoldPointers reports whether a value of type t can contain a pointer
// that JSON decoding left nil; byte slices, strings and numbers cannot.
func mayHoldPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Map:
		return true
	case reflect.Slice, reflect.Array:
		return mayHoldPointers(t.Elem())
	}
	return false
}

func joinPath(path, name string) string {
	switch {
	case name == "":
		return orDocument(path)
	case path == "":
		return name
	}
	return path + "." + name
}

func orDocument(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
