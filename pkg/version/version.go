// Package version knows the CNI specification versions the suite speaks and
// how they compare.
package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Current is the newest specification version the suite implements.
const Current = "1.1.0"

// All lists every specification version the plugins accept, oldest first.
var All = []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// Minimum versions of the verbs newer than ADD and DEL.
const (
	MinCheck  = "0.4.0"
	MinGC     = "1.1.0"
	MinStatus = "1.1.0"
)

// Parse reads a version of up to three dot-separated non-negative integers.
func Parse(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(v, ".")
	if v == "" || len(parts) > 3 {
		return out, fmt.Errorf("invalid version %q", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("invalid version %q", v)
		}
		out[i] = n
	}
	return out, nil
}

// Compare returns -1, 0 or 1 as a is older than, equal to or newer than b.
func Compare(a, b string) (int, error) {
	pa, err := Parse(a)
	if err != nil {
		return 0, err
	}
	pb, err := Parse(b)
	if err != nil {
		return 0, err
	}
	for i := range pa {
		switch {
		case pa[i] < pb[i]:
			return -1, nil
		case pa[i] > pb[i]:
			return 1, nil
		}
	}
	return 0, nil
}

// AtLeast reports whether v is a valid version not older than min.
func AtLeast(v, min string) bool {
	c, err := Compare(v, min)
	return err == nil && c >= 0
}

// Supported reports whether v is exactly one of All.
func Supported(v string) bool {
	for _, s := range All {
		if s == v {
			return true
		}
	}
	return false
}

// Family is the shape of results a version uses.
type Family int

// The result families.
const (
	Family020 Family = iota // 0.1.0, 0.2.0: ip4/ip6 objects
	Family040               // 0.3.0, 0.3.1, 0.4.0: ips with a version field
	Family100               // 1.0.0, 1.1.0
)

// FamilyOf returns the result family of a supported version.
func FamilyOf(v string) (Family, error) {
	switch v {
	case "0.1.0", "0.2.0":
		return Family020, nil
	case "0.3.0", "0.3.1", "0.4.0":
		return Family040, nil
	case "1.0.0", "1.1.0":
		return Family100, nil
	}
	return 0, fmt.Errorf("unsupported CNI version %q (supported: %s)", v, strings.Join(All, ", "))
}
