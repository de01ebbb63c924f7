package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
)

// NewNS creates a fresh network namespace, bind-mounted on a file in a
// temporary directory, and removes it when the test ends. Its loopback is
// left down, as a runtime leaves it.
func NewNS(t testing.TB) *ns.NetNS {
	t.Helper()
	Require(t)
	path := filepath.Join(t.TempDir(), "netns")
	if err := makeNS(path); err != nil {
		t.Fatalf("creating network namespace: %v", err)
	}
	n, err := ns.Open(path)
	if err != nil {
		t.Fatalf("opening network namespace %s: %v", path, err)
	}
	t.Cleanup(func() {
		n.Close()
		if err := RemoveNS(path); err != nil {
			t.Errorf("removing network namespace %s: %v", path, err)
		}
	})
	return n
}

// RemoveNS unmounts and deletes a namespace made by NewNS; tests use it to
// make a container's namespace disappear before DEL.
func RemoveNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmount: %w", err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// makeNS unshares a new network namespace on a locked thread, pins it with
// a bind mount on path, and returns the thread to where it was.
func makeNS(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := ns.Current()
		if err != nil {
			errc <- err
			return
		}
		defer origin.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		mountErr := unix.Mount(self, path, "none", unix.MS_BIND, "")
		if err := unix.Setns(int(origin.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("return to origin: %w", err) // thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		errc <- mountErr
	}()
	return <-errc
}

// RemoveLinkAtEnd deletes the link called name from the test's own
// namespace when the test ends, after the cleanups registered later (the
// containers' DELs). Plugins leave bridges in place by design; tests that
// make one remove it, so no later test meets its subnet or its name.
func RemoveLinkAtEnd(t testing.TB, name string) {
	t.Helper()
	t.Cleanup(func() {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return // never made, or already gone
		}
		if err := netlink.LinkDel(l); err != nil {
			t.Errorf("removing link %s: %v", name, err)
		}
	})
}

// VethPairNS makes a veth pair, dum0 and dum1, inside a fresh namespace
// and returns a function that runs fn there with both links.
func VethPairNS(t *testing.T) func(t *testing.T, fn func(l, other netlink.Link)) {
	t.Helper()
	Require(t)
	n := NewNS(t)
	if err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "dum0"}, PeerName: "dum1"})
	}); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, fn func(l, other netlink.Link)) {
		t.Helper()
		if err := n.Do(func() error {
			l, err := netlink.LinkByName("dum0")
			if err != nil {
				return err
			}
			other, err := netlink.LinkByName("dum1")
			if err != nil {
				return err
			}
			fn(l, other)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// Serve answers every connection to address (of network, as net.Listen
// takes them) inside n with answer(conn), until the test ends.
func Serve(t testing.TB, n *ns.NetNS, network, address string, answer func(net.Conn) string) {
	t.Helper()
	var l net.Listener
	if err := n.Do(func() (err error) { l, err = net.Listen(network, address); return err }); err != nil {
		t.Fatalf("listening on %s %s in %s: %v", network, address, n.Path(), err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			_, _ = io.WriteString(c, answer(c)) // the client reports a short answer
			c.Close()
		}
	}()
}
