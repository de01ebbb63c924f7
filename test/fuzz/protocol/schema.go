package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"

	"cnisuite/test/fuzz/jsontree"
)

// The result schema (CNI's result.json, draft 2020-12) in Go: every
// keyword it uses — type, required, pattern, minimum, maximum, items — for
// results of spec 0.3.0 and later. Results of 0.1.0 and 0.2.0 have the old
// ip4/ip6 shape, which the schema does not describe; they are checked
// against that shape. Checks the schema leaves to the spec's prose (an
// address is a CIDR, an interface index points into interfaces) are
// reported with a "spec:" prefix.

var (
	versionPattern = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	macPattern     = regexp.MustCompile(`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`)
)

// ValidateResult checks an ADD result printed for a configuration at
// version want and returns every problem found, joined.
func ValidateResult(out []byte, want string) error {
	tree, err := jsontree.Parse(out)
	if err != nil {
		return fmt.Errorf("result is not one JSON value: %w", err)
	}
	v := &validator{}
	root, ok := tree.(*jsontree.Object)
	if !ok {
		return fmt.Errorf("result is a JSON %s, want an object", jsontree.TypeName(tree))
	}
	v.noDuplicates("$", root)
	ver, ok := v.str("$.cniVersion", root, "cniVersion", true)
	switch {
	case !ok:
	case !versionPattern.MatchString(ver):
		v.fail("$.cniVersion %q does not match %s", ver, versionPattern)
	case ver != want:
		v.fail("spec: $.cniVersion %q, want the configuration's %q", ver, want)
	}
	if ver == "0.1.0" || ver == "0.2.0" {
		v.oldResult(root)
	} else {
		v.result(root)
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
}

func (v *validator) fail(format string, a ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, a...))
}

// noDuplicates reports keys given twice anywhere in the tree.
func (v *validator) noDuplicates(path string, x any) {
	switch t := x.(type) {
	case *jsontree.Object:
		seen := map[string]bool{}
		for _, f := range t.Fields {
			if seen[f.Key] {
				v.fail("%s: key %q given twice", path, f.Key)
			}
			seen[f.Key] = true
			v.noDuplicates(path+"."+jsontree.PathKey(f.Key), f.Value)
		}
	case *jsontree.Array:
		for i, it := range t.Items {
			v.noDuplicates(fmt.Sprintf("%s[%d]", path, i), it)
		}
	}
}

// str returns the string field key of o; a field of another type, or a
// missing required one, is reported.
func (v *validator) str(path string, o *jsontree.Object, key string, required bool) (string, bool) {
	x, ok := o.Get(key)
	if !ok {
		if required {
			v.fail("%s: required", path)
		}
		return "", false
	}
	s, ok := x.(string)
	if !ok {
		v.fail("%s: a JSON %s, want a string", path, jsontree.TypeName(x))
	}
	return s, ok
}

// integer checks the integer field key of o against [min, max] (max < min:
// no maximum) and returns it.
func (v *validator) integer(path string, o *jsontree.Object, key string, min, max float64) (float64, bool) {
	x, ok := o.Get(key)
	if !ok {
		return 0, false
	}
	n, isNum := x.(json.Number)
	f, err := strconv.ParseFloat(string(n), 64)
	if !isNum || err != nil || f != math.Trunc(f) {
		v.fail("%s: %s, want an integer", path, jsontree.Short(x))
		return 0, false
	}
	if f < min || (max >= min && f > max) {
		v.fail("%s: %s out of range", path, n)
		return 0, false
	}
	return f, true
}

// list returns the items of the array field key of o, each of which must
// be an object when objects is set.
func (v *validator) list(path string, o *jsontree.Object, key string) ([]any, bool) {
	x, ok := o.Get(key)
	if !ok {
		return nil, false
	}
	a, ok := x.(*jsontree.Array)
	if !ok {
		v.fail("%s: a JSON %s, want an array", path, jsontree.TypeName(x))
		return nil, false
	}
	return a.Items, true
}

// objects returns the items of the array field key of o, each of which
// must be an object.
func (v *validator) objects(path string, o *jsontree.Object, key string) []*jsontree.Object {
	items, _ := v.list(path, o, key)
	var out []*jsontree.Object
	for i, it := range items {
		if obj, ok := it.(*jsontree.Object); ok {
			out = append(out, obj)
		} else {
			v.fail("%s[%d]: a JSON %s, want an object", path, i, jsontree.TypeName(it))
			out = append(out, &jsontree.Object{})
		}
	}
	return out
}

// strings checks that the array field key of o holds only strings.
func (v *validator) strings(path string, o *jsontree.Object, key string) {
	items, _ := v.list(path, o, key)
	for i, it := range items {
		if _, ok := it.(string); !ok {
			v.fail("%s[%d]: a JSON %s, want a string", path, i, jsontree.TypeName(it))
		}
	}
}

// cidr checks that s, when given, is an address with a prefix length.
func (v *validator) cidr(path, s string, given bool) {
	if _, _, err := net.ParseCIDR(s); given && err != nil {
		v.fail("spec: %s %q is not an address/prefix", path, s)
	}
}

// ip checks that s, when given, is an address.
func (v *validator) ip(path, s string, given bool) {
	if given && net.ParseIP(s) == nil {
		v.fail("spec: %s %q is not an IP address", path, s)
	}
}
