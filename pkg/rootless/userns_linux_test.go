package rootless

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own (test/userns),
// which is what a rootless runtime gives its plugins: uid 0 of a user
// namespace that maps one user, with network and mount namespaces of its
// own and, here, a tmpfs over /run.
func TestMain(m *testing.M) { userns.Main(m) }

// readOnlyDir is a directory that cannot be written even by the user
// namespace's root: a tmpfs of the test's own, mounted read-only.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("mount -o ro -t tmpfs tmpfs %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestRootlessRuntime: as uid 0 of a user namespace the plugin is not the
// node's root: a state directory stays the node's path where it can be
// written (the runtime's /run), falls back to $XDG_RUNTIME_DIR/cni/<name>
// where it cannot, and errors gain the hint that says how to set one.
func TestRootlessRuntime(t *testing.T) {
	userns.RequireStateDirs(t)
	if os.Geteuid() != 0 {
		t.Fatalf("euid %d in the user namespace, want 0", os.Geteuid())
	}
	if NodeRoot() {
		t.Fatal("NodeRoot() = true as root of a user namespace mapping one user")
	}
	xdg := []string{"XDG_RUNTIME_DIR=/run/user/4242"}
	if got := StateDir("/run/cnisuite/records", "records", xdg); got != "/run/cnisuite/records" {
		t.Errorf("StateDir under a writable /run = %q, want the node's path", got)
	}
	ro := filepath.Join(readOnlyDir(t), "cnisuite")
	if got := StateDir(ro, "records", xdg); got != "/run/user/4242/cni/records" {
		t.Errorf("StateDir(%s) on a read-only mount = %q, want $XDG_RUNTIME_DIR/cni/records", ro, got)
	}
	if got := StateDir(ro, "records", nil); got != ro {
		t.Errorf("StateDir(%s) without XDG_RUNTIME_DIR = %q, want the node's path", ro, got)
	}
	if h := Hint("dataDir"); !strings.Contains(h, "set dataDir to a directory this user can write") {
		t.Errorf("Hint(dataDir) = %q, want it to name the key", h)
	}
}

// TestDeniedNetns: a namespace owned by another user namespace than the
// plugin's is one it may be denied (here a nested one: the machine's
// cannot even be opened from inside, as a rootless plugin finds); a
// namespace of its own user namespace is not. NetnsDenied says so with
// code 4.
func TestDeniedNetns(t *testing.T) {
	userns.Require(t)
	mine := userns.NewNS(t)
	if DeniedNetns(mine) {
		t.Errorf("DeniedNetns(%s), a namespace of the tests' own user namespace, = true", mine.Path())
	}
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
	if err := other.Start(); err != nil {
		t.Fatalf("unshare -Un sleep 60: %v", err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	path := fmt.Sprintf("/proc/%d/ns/net", other.Process.Pid)
	foreign, err := ns.Open(path)
	if err != nil {
		t.Fatalf("opening the other user namespace's network namespace: %v", err)
	}
	defer foreign.Close()
	if !DeniedNetns(foreign) {
		t.Errorf("DeniedNetns(%s), owned by another user namespace, = false", path)
	}
	err = NetnsDenied(path, unix.EPERM)
	if types.Code(err) != types.CodeInvalidEnv || !strings.Contains(err.Error(), `CNI_NETNS "`+path+`": cannot enter it`) {
		t.Errorf("NetnsDenied = %v (code %d), want code 4 naming CNI_NETNS", err, types.Code(err))
	}
}
