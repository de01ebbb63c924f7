package userns

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
)

// NewNS makes one more network namespace, owned by the tests' user
// namespace, for a test that needs two (a host and a container) or a
// clean one; it is released when the test ends. Its loopback is down, as
// a runtime leaves it. Its Path, /proc/PID/fd/N, names it for the test's
// lifetime, to the test and the commands it runs (a runtime's CNI_NETNS).
func NewNS(t testing.TB) *ns.NetNS {
	t.Helper()
	Require(t)
	type made struct {
		n, pin *ns.NetNS
		err    error
	}
	c := make(chan made, 1)
	go func() {
		runtime.LockOSThread()
		n, pin, err := unshareNet()
		if err == nil || !errors.Is(err, errStranded) {
			runtime.UnlockOSThread()
		} // else the thread stays locked and dies with this goroutine
		c <- made{n, pin, err}
	}()
	m := <-c
	if m.err != nil {
		t.Fatalf("making a network namespace: %v", m.err)
	}
	t.Cleanup(func() { m.n.Close(); m.pin.Close() })
	return m.n
}

var errStranded = errors.New("thread cannot return to its network namespace")

// unshareNet moves the calling (locked) thread into a new network
// namespace, opens it and moves the thread back. pin, open until n is
// closed, keeps the namespace alive and gives n its path /proc/PID/fd/N.
func unshareNet() (n, pin *ns.NetNS, err error) {
	origin, err := ns.Current()
	if err != nil {
		return nil, nil, err
	}
	defer origin.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, nil, fmt.Errorf("unshare: %w", err)
	}
	pin, err = ns.Current()
	if rerr := unix.Setns(int(origin.Fd()), unix.CLONE_NEWNET); rerr != nil {
		return nil, nil, fmt.Errorf("%w: %w", errStranded, rerr)
	}
	if err != nil {
		return nil, nil, err
	}
	// /proc/<pid>, not /proc/self: the path serves commands the test runs
	// (nsenter --net=PATH) as well.
	if n, err = ns.Open(fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), pin.Fd())); err != nil {
		pin.Close()
		return nil, nil, err
	}
	return n, pin, nil
}
