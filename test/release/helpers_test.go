package release

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// makeArtifacts runs `make target` (release or deb) in root for arches
// (empty: every one) into dir, with version stamped in at epoch; env adds
// to the build's environment (GOCACHE for a cold build).
func makeArtifacts(t *testing.T, root, target, dir, arches string, env ...string) {
	t.Helper()
	run(t, root, slices.Concat(buildEnv, env), "make", target,
		"RELEASE_DIR="+dir, "VERSION="+version, "ARCHES="+arches)
}

// entry is one file of a tar archive.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// readTar reads every entry of the tar archive r, named name in failures,
// in order.
func readTar(t *testing.T, name string, r io.Reader) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", name, h.Name, err)
		}
		out = append(out, entry{h, data})
	}
}

// checkToolRuns runs a tool as an admin first tries it, with -h: it must
// exit 0 and print its usage; and with -version, which must print the
// stamped version v.
func checkToolRuns(t *testing.T, path, v string) {
	t.Helper()
	cmd := exec.Command(path, "-h")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage of ") {
		t.Errorf("%s -h: %v, %q; want exit status 0 and its usage", path, err, out)
	}
	out, err = exec.Command(path, "-version").CombinedOutput()
	if want := "(cnisuite " + v + ")"; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("%s -version: %v, %q; want %q", path, err, out, want)
	}
}

// need skips the test when a tool is missing, unless the run requires
// every test (make test), where that is a failure.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

// repoRoot is the checkout this package lives in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts/release.sh")); err != nil {
		t.Fatalf("not in the cnisuite checkout: %v", err)
	}
	return root
}

// run runs a command in dir with env added to the test's environment and
// returns its standard output; a failure ends the test with its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(inherited(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// inherited is the test's environment without what would change a build
// from the one a user starts: the settings of a make that runs the tests
// (make test ARCHES=amd64) and the release script's own variables.
func inherited() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL",
			"ARCHES", "RELEASE_DIR", "VERSION", "SOURCE_DATE_EPOCH", "DEB_MAINTAINER"}, k)
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
