package fuzz

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"cnisuite/test/fuzz/mutate"
)

var testPaths = Paths{DataDir: mutate.PlaceholderRoot + "fz/data", ResolvConf: mutate.PlaceholderRoot + "fz/resolv.conf", NetNS: mutate.PlaceholderRoot + "fz/netns"}

// TestBasesAreJSON: every base configuration is valid JSON, has no
// duplicate keys and is safe to run.
func TestBasesAreJSON(t *testing.T) {
	for _, plugin := range Plugins {
		for i, b := range Bases[plugin] {
			text := NewInput(1, plugin, i, testPaths, false).Config
			if !json.Valid(text) {
				t.Errorf("%s/%s: not JSON: %s", plugin, b.Name, text)
			}
			if why := mutate.Unsafe(text); why != "" {
				t.Errorf("%s/%s: mutate.Unsafe = %s", plugin, b.Name, why)
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
			if why := mutate.Unsafe(in.Config); why != "" {
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
	for _, k := range mutate.Kinds() {
		if kinds[k] == 0 {
			t.Errorf("mutation %s never drawn", k)
		}
	}
	for _, k := range []string{"bytes", "env"} {
		if kinds[k] == 0 {
			t.Errorf("mutation %s never drawn", k)
		}
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
