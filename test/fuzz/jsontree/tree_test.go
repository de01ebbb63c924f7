package jsontree

import "testing"

// TestTreeRoundTrip: parsing and writing keep key order, duplicate keys
// and numbers exactly.
func TestTreeRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"b":1,"a":[null,true,"x",{}],"b":1e400,"n":18446744073709551616}`,
		`[]`, `"s"`, `-0`, `{"":{"":[[]]}}`,
	} {
		tree, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%s): %v", in, err)
		}
		if got := string(Marshal(tree)); got != in {
			t.Errorf("Marshal(Parse(%s)) = %s", in, got)
		}
	}
	if _, err := Parse([]byte(`{} {}`)); err == nil {
		t.Errorf("Parse of two values succeeded")
	}
}
