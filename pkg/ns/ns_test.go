package ns_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with a network
// namespace of its own (test/userns), as root or not.
func TestMain(m *testing.M) { userns.Main(m) }

func TestOpenErrors(t *testing.T) {
	if _, err := ns.Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ns.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
	f := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Open(f); !errors.Is(err, ns.ErrNotNetNS) {
		t.Errorf("Open(regular file) = %v, want ErrNotNetNS", err)
	}
	// Namespaces of other kinds, and /proc files that are none: the
	// first gave code 999 (setns failed later) before Open asked the kind.
	for _, p := range []string{"/proc/self/ns/pid", "/proc/self/ns/mnt", "/proc/self/status"} {
		if _, err := ns.Open(p); !errors.Is(err, ns.ErrNotNetNS) {
			t.Errorf("Open(%s) = %v, want ErrNotNetNS", p, err)
		}
	}
	n, err := ns.Open("/proc/self/ns/net")
	if err != nil {
		t.Fatalf("Open(/proc/self/ns/net) = %v", err)
	}
	n.Close()
}

func TestIsOwn(t *testing.T) {
	if !ns.IsOwn("/proc/self/ns/net") {
		t.Error("IsOwn(/proc/self/ns/net) = false")
	}
	if ns.IsOwn(filepath.Join(t.TempDir(), "missing")) {
		t.Error("IsOwn(missing) = true")
	}
}

func TestDoRunsInsideAndReturns(t *testing.T) {
	target := userns.NewNS(t)
	if ns.IsOwn(target.Path()) {
		t.Fatal("a new namespace is the own one")
	}
	var inside bool
	var links []netlink.Link
	err := target.Do(func() error {
		cur, err := ns.Current()
		if err != nil {
			return err
		}
		defer cur.Close()
		inside = sameNS(t, cur.Path(), target.Path())
		links, err = netlink.LinkList()
		return err
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if !inside {
		t.Fatal("fn did not run inside the target namespace")
	}
	if len(links) != 1 || links[0].Attrs().Name != "lo" {
		t.Fatalf("a fresh namespace should hold only lo, got %d links", len(links))
	}
	// The caller's thread is back where it was.
	cur, err := ns.Current()
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if sameNS(t, cur.Path(), target.Path()) {
		t.Fatal("after Do the caller is still inside the target namespace")
	}
	wantErr := errors.New("from fn")
	if err := target.Do(func() error { return wantErr }); !errors.Is(err, wantErr) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
}

func sameNS(t *testing.T, a, b string) bool {
	t.Helper()
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(sa, sb)
}

// A panic inside Do comes back on the caller's goroutine, where a recover
// (the skel's) can see it.
func TestDoForwardsPanic(t *testing.T) {
	n := userns.NewNS(t)
	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("recovered %v, want the panic of fn", v)
		}
	}()
	_ = n.Do(func() error { panic("boom") })
	t.Error("Do returned after fn panicked")
}
