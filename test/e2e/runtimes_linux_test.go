package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// builtRuntime is a runtime scripts/install-runtimes.sh built into the
// runtime cache, at the version scripts/runtime-versions.env names.
type builtRuntime struct {
	name, version string
	bin           string // its directory of programs
}

// runtimeCache is where scripts/install-runtimes.sh puts its builds.
func runtimeCache() string {
	if dir := os.Getenv("CNISUITE_RUNTIMES"); dir != "" {
		return dir
	}
	return "/var/cache/cnisuite/runtimes"
}

// findRuntime returns the build of a runtime (containerd, crio, critest,
// rootlesskit, nerdctl) and fails the test, naming the script, when it or
// one of its programs is missing.
func findRuntime(t *testing.T, name string, programs ...string) builtRuntime {
	t.Helper()
	key := map[string]string{"containerd": "CONTAINERD_VERSION", "crio": "CRIO_VERSION", "critest": "CRITEST_VERSION",
		"rootlesskit": "ROOTLESSKIT_VERSION", "nerdctl": "NERDCTL_VERSION"}[name]
	version, err := runtimeVersion(filepath.Join(moduleRoot(t), "scripts", "runtime-versions.env"), key)
	if err != nil {
		t.Fatal(err)
	}
	r := builtRuntime{name: name, version: version, bin: filepath.Join(runtimeCache(), name+"-"+version, "bin")}
	var paths []string
	for _, p := range programs {
		paths = append(paths, filepath.Join(r.bin, p))
	}
	requireFiles(t, "run scripts/install-runtimes.sh (make deps does)", paths...)
	return r
}

// runtimeVersion reads KEY=value from a shell variables file.
func runtimeVersion(file, key string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("runtime versions: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("runtime versions: no %s in %s", key, file)
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
func kubeConflist(t *testing.T, o conflistOptions) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "examples", "kubernetes.conflist"))
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
