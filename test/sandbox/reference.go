package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// ReferencePlugins builds the reference plugins (scripts/reference-plugins.sh
// at its pinned version) once per test binary and set, into TMPDIR (the
// sandbox's, removed with it), and returns the directory. plugins is the
// script's REFERENCE_PLUGINS ("" for the counterparts of our five, or a
// list such as "meta/firewall meta/bandwidth meta/sbr").
func ReferencePlugins(t testing.TB, plugins string) string {
	t.Helper()
	refMu.Lock()
	b, ok := refBuilds[plugins]
	if !ok {
		b = &refBuild{}
		refBuilds[plugins] = b
	}
	refMu.Unlock()
	b.once.Do(func() { b.dir, b.err = buildReference(plugins) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}

type refBuild struct {
	once sync.Once
	dir  string
	err  error
}

var (
	refMu     sync.Mutex
	refBuilds = map[string]*refBuild{}
)

func buildReference(plugins string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "cnisuite-reference-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "reference-plugins.sh"), dir)
	if plugins != "" {
		cmd.Env = append(os.Environ(), "REFERENCE_PLUGINS="+plugins)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the reference plugins %q: %w\n%s", plugins, err, out)
	}
	return dir, nil
}
