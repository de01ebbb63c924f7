package fuzz

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

var testPaths = Paths{DataDir: PlaceholderRoot + "fz/data", ResolvConf: PlaceholderRoot + "fz/resolv.conf", NetNS: PlaceholderRoot + "fz/netns"}

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

// TestBasesAreJSON: every base configuration is valid JSON, has no
// duplicate keys and is safe to run.
func TestBasesAreJSON(t *testing.T) {
	for _, plugin := range Plugins {
		for i, b := range Bases[plugin] {
			text := NewInput(1, plugin, i, testPaths, false).Config
			if !json.Valid(text) {
				t.Errorf("%s/%s: not JSON: %s", plugin, b.Name, text)
			}
			if why := Unsafe(text); why != "" {
				t.Errorf("%s/%s: Unsafe = %s", plugin, b.Name, why)
			}
		}
	}
}

// TestMutateReproducible: an input depends only on (seed, plugin, index),
// and different indexes give different inputs.
func TestMutateReproducible(t *testing.T) {
	seen := map[string]bool{}
	for _, plugin := range Plugins {
		for i := range 60 {
			a := NewInput(7, plugin, i, testPaths, true)
			b := NewInput(7, plugin, i, testPaths, true)
			if !bytes.Equal(a.Config, b.Config) || strings.Join(a.Mutations, "|") != strings.Join(b.Mutations, "|") || a.Env != b.Env {
				t.Fatalf("%s input %d differs between two builds", plugin, i)
			}
			if len(a.Mutations) == 0 {
				t.Errorf("%s input %d: no mutation", plugin, i)
			}
			seen[string(a.Config)] = true
		}
	}
	if len(seen) < 250 {
		t.Errorf("300 inputs gave only %d distinct configurations", len(seen))
	}
}

// TestMutationsAreSafe: no mutated input names a path outside the
// sandbox's tmpfs mounts or makes bridge delegate to itself.
func TestMutationsAreSafe(t *testing.T) {
	for _, plugin := range Plugins {
		for i := range 150 {
			in := NewInput(3, plugin, i, testPaths, true)
			if why := Unsafe(in.Config); why != "" {
				t.Errorf("%s input %d is unsafe (%s): %s", plugin, i, why, in.Config)
			}
		}
	}
}

// TestMutationKinds: over a few hundred inputs every kind of mutation the
// fuzzer promises is drawn.
func TestMutationKinds(t *testing.T) {
	kinds := map[string]int{}
	for _, plugin := range Plugins {
		for i := range 150 {
			for _, m := range NewInput(11, plugin, i, testPaths, true).Mutations {
				kind, _, _ := strings.Cut(m, ":")
				kinds[kind]++
			}
		}
	}
	for _, m := range treeMutations {
		if kinds[m.name] == 0 {
			t.Errorf("mutation %s never drawn", m.name)
		}
	}
	for _, k := range []string{"bytes", "env"} {
		if kinds[k] == 0 {
			t.Errorf("mutation %s never drawn", k)
		}
	}
}

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
		if tree, err := Parse([]byte(tc.text)); err == nil {
			if got := unsafeTree(tree, 0, "") != ""; got != tc.bad {
				t.Errorf("unsafeTree(%s) = %v, want %v", tc.text, got, tc.bad)
			}
		}
	}
}

func TestFlipBytesChangesText(t *testing.T) {
	base := []byte(`{"cniVersion":"1.1.0","name":"n"}`)
	r := Rand(1, "x", 0)
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
	root := any(Obj("a", deep(Rand(1, "x", 0), 100000)))
	if n := len(slots(&root)); n > maxSlotDepth+2 {
		t.Errorf("slots of a 100,000-deep value: %d, want at most %d", n, maxSlotDepth+2)
	}
}

// TestInputIndependentOfPaths: where a run's temporary directories are
// does not change its inputs (only the paths in them), so a failing input
// reproduces in a run of its own.
func TestInputIndependentOfPaths(t *testing.T) {
	other := Paths{DataDir: "/run/elsewhere-longer/in-9/data", ResolvConf: "/run/elsewhere-longer/in-9/resolv.conf", NetNS: "/run/x/netns"}
	for _, plugin := range Plugins {
		for i := range 60 {
			a := NewInput(5, plugin, i, testPaths, true)
			b := NewInput(5, plugin, i, other, true)
			back := bytes.ReplaceAll(b.Config, []byte(other.DataDir), []byte(testPaths.DataDir))
			back = bytes.ReplaceAll(back, []byte(other.ResolvConf), []byte(testPaths.ResolvConf))
			back = bytes.ReplaceAll(back, []byte(other.NetNS), []byte(testPaths.NetNS))
			if !bytes.Equal(a.Config, back) || len(a.Mutations) != len(b.Mutations) {
				t.Fatalf("%s input %d depends on the paths:\n%s\n%s", plugin, i, a.Config, back)
			}
		}
	}
}
