package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"cnisuite/test/crinode"
	"cnisuite/test/sandbox"
)

// findRuntime returns the build of a runtime (containerd, crio, critest,
// rootlesskit, nerdctl) and fails the test, naming the script, when it or
// one of its programs is missing.
func findRuntime(t testing.TB, name string, programs ...string) crinode.Build {
	t.Helper()
	key := map[string]string{"containerd": "CONTAINERD_VERSION", "crio": "CRIO_VERSION", "critest": "CRITEST_VERSION",
		"rootlesskit": "ROOTLESSKIT_VERSION", "nerdctl": "NERDCTL_VERSION"}[name]
	b, missing, err := crinode.FindBuild(sandbox.ModuleRoot(t), name, key, programs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("%v missing: run scripts/install-runtimes.sh (make deps does)", missing)
	}
	return b
}

// conflistOptions say how kubeConflist changes examples/kubernetes.conflist.
type conflistOptions struct {
	version string     // cniVersion
	logFile string     // the per-call log of every plugin, at debug
	ranges  [][]string // host-local's ranges as subnets, or [subnet, start, end]
}

// kubeConflist is examples/kubernetes.conflist with another cniVersion,
// every plugin logging its calls to one file, and, if given, other ranges:
// the configuration users copy, seen by the runtimes that send 1.1.0.
func kubeConflist(t testing.TB, o conflistOptions) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sandbox.ModuleRoot(t), "examples", "kubernetes.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("examples/kubernetes.conflist: %v", err)
	}
	list["cniVersion"] = o.version
	for _, p := range list["plugins"].([]any) {
		plugin := p.(map[string]any)
		plugin["logFile"], plugin["logLevel"] = o.logFile, "debug"
		if ipam, ok := plugin["ipam"].(map[string]any); ok && len(o.ranges) > 0 {
			ipam["ranges"] = rangeSets(o.ranges)
		}
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rangeSets renders host-local range sets, one range each.
func rangeSets(ranges [][]string) []any {
	var sets []any
	for _, r := range ranges {
		one := map[string]any{"subnet": r[0]}
		if len(r) == 3 {
			one["rangeStart"], one["rangeEnd"] = r[1], r[2]
		}
		sets = append(sets, []any{one})
	}
	return sets
}
