package scantest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

type inner struct {
	Shared string `json:"shared"`
	Own    int    `json:"own"`
}

type deeper struct {
	Deep bool `json:"deep"`
}

type shape struct {
	Tagged   string `json:"tagged"`
	Untagged string
	Options  int    `json:"options,omitempty"`
	Skipped  string `json:"-"`
	//lint:ignore SA5008 the "-," tag, a key named "-", is what Keys must read
	Dash      string `json:"-,"`
	unwritten string
	Shared    string `json:"shared"` // wins over inner's
	inner
	*deeper
}

// marshalledKeys is encoding/json's own answer: the keys it writes for a
// value whose every field is set (the keys it writes are the keys it
// reads).
func marshalledKeys(t *testing.T, v any) []string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestKeysAsEncodingJSON: Keys lists what encoding/json reads — tags,
// untagged names, the "-," key, embedded structs (and pointers to them)
// with the outer field winning a key — and nothing it ignores.
func TestKeysAsEncodingJSON(t *testing.T) {
	v := shape{Tagged: "a", Untagged: "b", Options: 1, Skipped: "c", Dash: "d", unwritten: "e",
		Shared: "f", inner: inner{Shared: "g", Own: 2}, deeper: &deeper{Deep: true}}
	got := Keys(reflect.TypeOf(v))
	slices.Sort(got)
	if want := marshalledKeys(t, v); !slices.Equal(got, want) {
		t.Errorf("Keys = %q, encoding/json = %q", got, want)
	}
}

// TestDiff: a plain reader missing a key, or reading one the type lacks,
// is refused; the exact list, whole or in parts, is not.
func TestDiff(t *testing.T) {
	typ := reflect.TypeOf(inner{})
	for _, tc := range []struct {
		plain [][]string
		fail  bool
	}{
		{[][]string{{"shared", "own"}}, false},
		{[][]string{{"shared"}, {"own"}}, false},
		{[][]string{{"shared"}}, true},
		{[][]string{{"shared", "own", "extra"}}, true},
	} {
		if err := Diff(typ, tc.plain...); (err != nil) != tc.fail {
			t.Errorf("Diff(%q) = %v, want an error: %v", tc.plain, err, tc.fail)
		}
	}
}
