package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// TestCommandsFromCloneUnderTmp: a newcomer who clones into /tmp can run the
// README's commands. The sandbox used to mount a tmpfs over /tmp, which hid
// such a checkout from the very command it was running. The clone's own
// sandbox is a real, nested one (CNISUITE_SANDBOX is cleared for it).
func TestCommandsFromCloneUnderTmp(t *testing.T) {
	sandbox.Require(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	parent, err := os.MkdirTemp("/tmp", "cnisuite-clone-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	clone := filepath.Join(parent, "cnisuite")
	runIn(t, root, 2*time.Minute, "git", "clone", "--quiet", root, clone)

	out := runIn(t, clone, 8*time.Minute, "make", "demo")
	for _, want := range []string{"hello from container c2", "Done: two containers attached"} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo from %s did not show %q:\n%s", clone, want, out)
		}
	}
	out = runIn(t, clone, 5*time.Minute, "scripts/sandbox.sh", "go", "test", "-count=1", "./pkg/types", "./pkg/skel")
	if strings.Count(out, "ok  \tcnisuite/pkg/") != 2 {
		t.Errorf("unit tests in the sandbox from %s:\n%s", clone, out)
	}
}

// runIn runs a command in dir outside the current sandbox's marker, bounded
// by limit, and fails the test if it fails.
func runIn(t *testing.T, dir string, limit time.Duration, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNISUITE_SANDBOX=") && !strings.HasPrefix(kv, "CNISUITE_BIN=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 10 * time.Second
	done := make(chan struct{})
	timer := time.AfterFunc(limit, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		close(done)
	})
	out, err := cmd.CombinedOutput()
	if !timer.Stop() {
		<-done
		t.Fatalf("%s %v in %s: killed after %v\n%s", name, args, dir, limit, out)
	}
	if err != nil {
		t.Fatalf("%s %v in %s: %v\n%s", name, args, dir, err, out)
	}
	return string(out)
}
