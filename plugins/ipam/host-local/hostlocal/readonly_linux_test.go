package hostlocal

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/test/sandbox"
)

// A dataDir that went read-only (a full or failing disk remounted ro): DEL
// of an attachment with a lease fails with code 5 naming the lease, its
// owner and the reason; DEL of one without a lease still succeeds.
func TestDelOnReadOnlyDataDir(t *testing.T) {
	sandbox.Require(t)
	dataDir := t.TempDir()
	c := conf("1.0.0", dataDir, dualStack)
	mustRun(t, call{cmd: "ADD", id: "c1", conf: c})
	readOnly(t, dataDir)

	mustRun(t, call{cmd: "DEL", id: "never-added", conf: c})
	out, status := run(t, call{cmd: "DEL", id: "c1", conf: c})
	if status == 0 {
		t.Fatalf("DEL on a read-only dataDir succeeded, but its lease cannot have been released")
	}
	code, msg := errorOf(t, out)
	for _, want := range []string{"cannot release the lease of 10.1.2.", `container "c1"`, "read-only file system", "lease directory"} {
		if code != 5 || !strings.Contains(msg, want) {
			t.Errorf("DEL on a read-only dataDir = code %d %q, want code 5 naming %q", code, msg, want)
		}
	}
	t.Logf("DEL on a read-only dataDir: code %d %s", code, msg)
	if strings.Contains(msg, ".lease.tmp") || strings.Contains(msg, ".stamp") {
		t.Errorf("the error names a temporary file the user never heard of: %q", msg)
	}
}

// readOnly bind-mounts dir read-only over itself until the test ends (the
// sandbox's mount namespace is private, so the node never sees it).
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
