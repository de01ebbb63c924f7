// Package ns opens network namespaces by path and runs code inside them on
// a locked OS thread.
package ns

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/stack"
)

// Errors returned by Open.
var (
	ErrNotExist = errors.New("network namespace does not exist")
	ErrNotNetNS = errors.New("path is not a network namespace")
)

// NetNS is an open network namespace.
type NetNS struct {
	file *os.File
	path string
}

// Open opens the network namespace at path: an nsfs bind mount or a
// /proc/<pid>/ns/net link. A missing path wraps ErrNotExist, anything
// else that is not a namespace wraps ErrNotNetNS.
func Open(path string) (*NetNS, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%w: %s", ErrNotExist, path)
		}
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	if st.Type != unix.NSFS_MAGIC && st.Type != unix.PROC_SUPER_MAGIC {
		return nil, fmt.Errorf("%w: %s", ErrNotNetNS, path)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotExist, path)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := requireNetNS(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrNotNetNS, path, err)
	}
	return &NetNS{file: f, path: path}, nil
}

// nsGetNSType is ioctl_ns(2)'s NS_GET_NSTYPE: the kind of namespace.
const nsGetNSType = 0xb703

// requireNetNS refuses an open file that is not a network namespace: a
// namespace of another kind (/proc/self/ns/pid), or a /proc file that is
// not a namespace at all.
func requireNetNS(f *os.File) error {
	kind, err := unix.IoctlRetInt(int(f.Fd()), nsGetNSType)
	if err != nil {
		return fmt.Errorf("not a namespace: %w", err)
	}
	if kind != unix.CLONE_NEWNET {
		return fmt.Errorf("a namespace of another kind (%#x)", kind)
	}
	return nil
}

// Current opens the network namespace of the calling thread.
func Current() (*NetNS, error) {
	return Open(threadNSPath())
}

func threadNSPath() string {
	return fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
}

// Path returns the path the namespace was opened from.
func (n *NetNS) Path() string { return n.path }

// Fd returns the namespace's file descriptor.
func (n *NetNS) Fd() uintptr { return n.file.Fd() }

// Close releases the namespace handle.
func (n *NetNS) Close() error { return n.file.Close() }

// Do runs fn with the calling goroutine's work moved into n: on a fresh
// goroutine locked to its OS thread, which enters n, runs fn and returns to
// the original namespace. A thread that cannot return stays locked, so the
// runtime discards it instead of reusing it in the wrong namespace. A panic
// in fn is raised again on the calling goroutine (its thread, still in n,
// is discarded), so that the caller's recover — the skel's last resort —
// sees it instead of the process dying with a stack.
func (n *NetNS) Do(fn func() error) error {
	var wg sync.WaitGroup
	var err error
	var panicked []any
	wg.Add(1)
	go func() {
		stack.Presize()
		defer wg.Done()
		defer func() {
			if v := recover(); v != nil {
				panicked = []any{v}
			}
		}()
		err = n.doLocked(fn)
	}()
	wg.Wait()
	if panicked != nil {
		panic(panicked[0])
	}
	return err
}

func (n *NetNS) doLocked(fn func() error) error {
	runtime.LockOSThread()
	origin, err := os.Open(threadNSPath())
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own network namespace: %w", err)
	}
	defer origin.Close()
	if err := unix.Setns(int(n.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", n.path, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(origin.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it dies with this goroutine.
		return errors.Join(fnErr, fmt.Errorf("return from network namespace %s: %w", n.path, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// Do opens the namespace at path, runs fn inside it and closes it.
func Do(path string, fn func() error) error {
	n, err := Open(path)
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Do(fn)
}

// IsOwn reports whether path names the network namespace the process runs
// in. A path that cannot be read is not the own namespace. It asks about
// the calling thread, not the process's first one: a goroutine of Do may
// hold that thread in another namespace (bridge runs host-local in its own
// process while its other steps are in the container), and the threads
// free goroutines run on are all in the process's namespace.
func IsOwn(path string) bool {
	var a, b unix.Stat_t
	if unix.Stat(path, &a) != nil || unix.Stat("/proc/thread-self/ns/net", &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// nsGetUserNS is NS_GET_USERNS (linux/nsfs.h): _IO(0xb7, 0x1).
const nsGetUserNS = 0xb701

// ForeignOwner reports whether the namespace belongs to a user namespace
// other than the process's own: a rootless runtime's plugin (uid 0 of its
// user namespace) cannot enter such a namespace, and the kernel's refusal
// reaches us only as text through the netlink library ("failed to set
// into network namespace …: operation not permitted").
// Equivalent to: lsns -o NS,USERNS, comparing with /proc/self/ns/user
func (n *NetNS) ForeignOwner() (bool, error) {
	fd, err := unix.IoctlRetInt(int(n.file.Fd()), nsGetUserNS)
	if errors.Is(err, unix.EPERM) {
		return true, nil // the owner is outside the process's user namespaces
	}
	if err != nil {
		return false, fmt.Errorf("owner of %s: %w", n.path, err)
	}
	defer unix.Close(fd)
	var owner, own unix.Stat_t
	if err := unix.Fstat(fd, &owner); err != nil {
		return false, fmt.Errorf("owner of %s: %w", n.path, err)
	}
	if err := unix.Stat("/proc/self/ns/user", &own); err != nil {
		return false, fmt.Errorf("own user namespace: %w", err)
	}
	return owner.Ino != own.Ino || owner.Dev != own.Dev, nil
}
