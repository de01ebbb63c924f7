// Package sandbox holds the helpers of privileged tests: the guard that
// keeps them inside scripts/sandbox.sh, throwaway network namespaces, the
// freshly built plugin binaries and a runtime client to drive them.
package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Require skips the test unless it runs as root inside scripts/sandbox.sh,
// so a privileged test can never touch the machine's own network. With
// CNISUITE_REQUIRE_PRIVILEGED=1 (set by make test and CI) it fails instead.
func Require(t testing.TB) {
	t.Helper()
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "needs root (run `make test` as root)"
	case os.Getenv("CNISUITE_SANDBOX") != "1":
		why = "must run inside scripts/sandbox.sh so the machine's own network is never touched (`make test` does this)"
	case !inSandboxNetns():
		why = "CNISUITE_SANDBOX=1 is set, but this is not the network namespace scripts/sandbox.sh made: run through the script, not with the variable set by hand"
	default:
		return
	}
	if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("privileged test cannot run: %s", why)
	}
	t.Skipf("skipping privileged test: %s", why)
}

// startNetns is the network namespace the test process started in, read
// before any test could move a thread (or the main one) elsewhere.
var startNetns, _ = os.Readlink("/proc/thread-self/ns/net")

// inSandboxNetns reports whether the process started in the network
// namespace scripts/sandbox.sh made and named in CNISUITE_SANDBOX_NETNS.
func inSandboxNetns() bool {
	want := os.Getenv("CNISUITE_SANDBOX_NETNS")
	return startNetns != "" && want != "" && startNetns == want
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Bin returns the directory of the plugin binaries: $CNISUITE_BIN when set
// (make test sets it to bin/ after building), else a fresh build of every
// plugin of the module, made once per test process.
func Bin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("CNISUITE_BIN"); dir != "" {
		return dir
	}
	buildOnce.Do(func() { buildDir, buildErr = buildPlugins() })
	if buildErr != nil {
		t.Fatalf("building plugins: %v", buildErr)
	}
	return buildDir
}

func buildPlugins() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "cnisuite-bin-")
	if err != nil {
		return "", err
	}
	mains, err := filepath.Glob(filepath.Join(root, "plugins", "*", "*"))
	if err != nil {
		return "", err
	}
	if err := goBuild(root, dir, nil, mains...); err == nil {
		return dir, nil
	}
	// Some plugin does not build: build the others one by one, so tests of
	// the plugins that do build still run; a test needing a missing one
	// fails on it with the build error in the log.
	var failed []string
	for _, m := range mains {
		if err := goBuild(root, dir, nil, m); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "sandbox: some plugins did not build:\n%s\n", strings.Join(failed, "\n"))
	}
	return dir, nil
}

// goBuild builds pkgs into dir through scripts/build.sh, as make build
// does (so bridge knows the host-local built with it); extra holds more
// environment (LDFLAGS, BUILDFLAGS).
func goBuild(root, dir string, extra []string, pkgs ...string) error {
	cmd := exec.Command(filepath.Join(root, "scripts", "build.sh"), append([]string{dir}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), extra...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/build.sh %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// ModuleRoot is the directory of the module's go.mod (the checkout the
// test runs in).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the cnisuite module")
	}
	return filepath.Dir(mod), nil
}

// BuildStamped builds the given main packages (module paths such as
// "./plugins/main/bridge") into a fresh directory of the test's own, the
// way a release does (scripts/build.sh, no VCS data) with the suite's
// version stamp set to stamp, and returns the directory.
func BuildStamped(t testing.TB, stamp string, pkgs ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	extra := []string{"BUILDFLAGS=-trimpath -buildvcs=false", "LDFLAGS=-X cnisuite/pkg/skel.Suite=" + stamp}
	if err := goBuild(root, dir, extra, pkgs...); err != nil {
		t.Fatal(err)
	}
	return dir
}
