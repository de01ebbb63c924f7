package mutate

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"cnisuite/test/fuzz/jsontree"
)

func TestUnsafe(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  bool
	}{
		{`{"dataDir":"/tmp/cnisuite-fuzz/x/y"}`, false},
		{`{"dataDir":"/tmp/x/y"}`, os.TempDir() != "/tmp"},
		{`{"dataDir":"/run/cni/x"}`, false},
		{`{"dataDir":"/Tmp/x"}`, true},
		{`{"dataDir":"/tmp/../etc"}`, true},
		{`{"dataDir":"\/etc"}`, true},
		{`{"a":{"/etc/passwd":1}}`, true},
		{`{"dataDir":"../../x"}`, true},
		{`{"dataDir":"../x"}`, false},
		{`{"type":"bridge","ipam":{"type":"host-local"}}`, false},
		{`{"type":"bridge","ipam":{"type":"bridge"}}`, true},
		{`{"ipam":{"TYPE":"bridge"}}`, true},
		{`{"ipam":{"type":"bridge"`, true},
		{`{"ipam":{"x":"bridge","type":"b"}}`, false},
		{`["bridge",{"a":[{"type":"bridge"}]}]`, true},
		{`not json /etc`, false},
	} {
		if got := Unsafe([]byte(tc.text)) != ""; got != tc.bad {
			t.Errorf("Unsafe(%s) = %v, want %v", tc.text, got, tc.bad)
		}
		if tree, err := jsontree.Parse([]byte(tc.text)); err == nil {
			if got := unsafeTree(tree, 0, "") != ""; got != tc.bad {
				t.Errorf("unsafeTree(%s) = %v, want %v", tc.text, got, tc.bad)
			}
		}
	}
}

func TestFlipBytesChangesText(t *testing.T) {
	base := []byte(`{"cniVersion":"1.1.0","name":"n"}`)
	r := rand.New(rand.NewPCG(1, 0))
	changed := 0
	for range 200 {
		out, what := flipBytes(r, base)
		if what == "" {
			t.Fatal("flipBytes said nothing")
		}
		if !bytes.Equal(out, base) {
			changed++
		}
	}
	if changed < 150 {
		t.Errorf("only %d of 200 flips changed the text", changed)
	}
}

func TestDeepMutationStaysCheap(t *testing.T) {
	root := any(jsontree.Obj("a", deep(rand.New(rand.NewPCG(1, 0)), 100000)))
	if n := len(slots(&root)); n > maxSlotDepth+2 {
		t.Errorf("slots of a 100,000-deep value: %d, want at most %d", n, maxSlotDepth+2)
	}
}

// Drop removes each place in turn, root first, and says when there is
// none left to drop.
func TestDrop(t *testing.T) {
	tree, err := jsontree.Parse([]byte(`{"a":[1,2],"b":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; ; i++ {
		v, ok := Drop(tree, i)
		if !ok {
			break
		}
		got = append(got, string(jsontree.Marshal(v)))
	}
	want := []string{`null`, `{"b":3}`, `{"a":[2],"b":3}`, `{"a":[1],"b":3}`, `{"a":[1,2]}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Drop of each place = %q, want %q", got, want)
	}
	if string(jsontree.Marshal(tree)) != `{"a":[1,2],"b":3}` {
		t.Errorf("Drop changed the tree it was given: %s", jsontree.Marshal(tree))
	}
}
