// Package userns runs a package's tests as root of a user namespace of
// their own, with a network and a mount namespace of its own, whether the
// test process is root or an unprivileged user: the kernel gives the owner
// of a fresh user namespace CAP_NET_ADMIN over the network namespaces it
// owns, and over nothing else. Links, addresses, routes and net sysctls the
// tests make there are seen by no one outside and vanish with the process.
//
// A package opts in with
//
//	func TestMain(m *testing.M) { userns.Main(m) }
//
// and each test that programs the network calls Require (or NewNS, which
// calls it). Main starts the test binary again in the new namespaces before
// any test runs, and the tests run there; the first process only waits and
// passes on the exit status. Where user namespaces cannot be made (a kernel
// or a sandbox that forbids them), the tests run in place and Require skips
// them with the reason, or fails them under CNISUITE_REQUIRE_PRIVILEGED=1.
package userns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
)

// childEnv marks the process started in the new namespaces; its value is
// the network namespace of the process that started it, which the child
// must not be in.
const childEnv = "CNISUITE_USERNS_PARENT_NETNS"

var (
	// inside is set by Main in the started process, once it has checked
	// that its network namespace is a fresh one.
	inside bool
	// unavailable says why the tests run in place, when they do.
	unavailable = "the package's TestMain does not call userns.Main"
)

// Main runs m's tests in a fresh user, network and mount namespace and
// exits with their status. It must be called from TestMain, before
// anything else touches the network.
func Main(m *testing.M) {
	if parent, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(m, parent))
	}
	code, err := reexec()
	if err == nil {
		os.Exit(code)
	}
	unavailable = err.Error()
	os.Exit(m.Run())
}

// reexec starts this test binary again, with the same arguments, as uid
// and gid 0 of a new user namespace mapped to the caller's own, in a new
// network and mount namespace, and returns its exit status. An error means
// the namespaces could not be made and nothing ran.
func reexec() (int, error) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return 0, fmt.Errorf("reading the own network namespace: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), childEnv+"="+own)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL, // never outlive the process that waits for it
	}
	// The thread that starts the child must outlive it (Pdeathsig follows
	// the thread, not the process).
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot make a user namespace with a network namespace here (%w): "+
			"unprivileged user namespaces are off or forbidden (sysctl user.max_user_namespaces, "+
			"kernel.unprivileged_userns_clone, a seccomp or AppArmor policy)", err)
	}
	stop := forwardSignals(cmd.Process)
	defer stop()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode(), nil
	}
	fmt.Fprintf(os.Stderr, "userns: the tests in the new namespaces ended: %v\n", err)
	return 1, nil
}

// forwardSignals passes an interrupt or termination on to p, so that the
// tests there stop as they would have here.
func forwardSignals(p *os.Process) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGQUIT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// child runs the tests in the namespaces reexec made, after checking that
// its network namespace is not parent's, and returns their status.
func child(m *testing.M, parent string) int {
	if err := enter(parent); err != nil {
		fmt.Fprintf(os.Stderr, "userns: not running the tests: %v\n", err)
		return 1
	}
	inside = true
	return m.Run()
}

// enter checks the namespaces this process starts in and prepares them:
// mounts private, a sysfs of this network namespace on /sys (so
// /sys/class/net shows its links only), a tmpfs over every state directory,
// loopback up, as scripts/sandbox.sh leaves its namespace.
func enter(parent string) error {
	if err := os.Unsetenv(childEnv); err != nil {
		return err
	}
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("reading the own network namespace: %w", err)
	}
	if own == parent {
		return fmt.Errorf("network namespace %s is the one of the process that started this one", own)
	}
	if err := ownedHere(); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting a sysfs of the new network namespace on /sys: %w", err)
	}
	if err := mountStateDirs(); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	return nil
}

// StateDirs are where plugins, runtimes and we keep state on a node, the
// directories scripts/sandbox.sh hides: the child mounts an empty tmpfs
// over each one that exists (a tmpfs is what the owner of a mount
// namespace may mount), so what a test writes there is its own.
var StateDirs = []string{"/run", "/var/lib/cni", "/etc/cni", "/opt/cni", "/var/lib/containers", "/var/lib/containerd", "/etc/containers"}

// missingState lists the StateDirs the child found missing: it cannot
// make them (as root of a user namespace mapped to the machine's root it
// could, on the machine's own file system), so RequireStateDirs refuses
// tests that would write there.
var missingState []string

// mountStateDirs mounts an empty tmpfs over every existing StateDirs entry,
// and makes /run/netns and /run/lock as a fresh node has them.
func mountStateDirs() error {
	for _, d := range StateDirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			missingState = append(missingState, d)
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs over %s: %w", d, err)
		}
	}
	for _, d := range []string{"/run/netns", "/run/lock"} {
		if err := os.MkdirAll(d, 0o755); err != nil && !slices.Contains(missingState, "/run") {
			return err
		}
	}
	return nil
}

// RequireStateDirs is Require for a test that writes state where a node
// keeps it (StateDirs): it also needs every one of them to be a tmpfs of
// the test's own, and skips (fails under CNISUITE_REQUIRE_PRIVILEGED=1)
// when one is missing on this machine.
func RequireStateDirs(t testing.TB) {
	t.Helper()
	Require(t)
	if len(missingState) == 0 {
		return
	}
	msg := fmt.Sprintf("state directories %v do not exist on this machine, so no tmpfs of the test's own covers them", missingState)
	if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// ownedHere proves, whatever the environment says, that the network
// namespace is not the machine's: it belongs to this process's user
// namespace, and that one maps a single user, as reexec made it (the
// machine's own maps all of them).
func ownedHere() error {
	uidMap, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return fmt.Errorf("reading the user namespace's uid map: %w", err)
	}
	if f := strings.Fields(string(uidMap)); len(f) != 3 || f[0] != "0" || f[2] != "1" {
		return fmt.Errorf("the user namespace maps %q, not one user to 0: it is not the one userns.Main makes", uidMap)
	}
	n, err := ns.Current()
	if err != nil {
		return err
	}
	defer n.Close()
	foreign, err := n.ForeignOwner()
	if err != nil {
		return err
	}
	if foreign {
		return errors.New("the network namespace belongs to another user namespace than this process's")
	}
	return nil
}

// Require skips the test unless it runs in the namespaces Main made, so a
// test that programs the network never touches the machine's own. With
// CNISUITE_REQUIRE_PRIVILEGED=1 (make test and CI) it fails instead.
func Require(t testing.TB) {
	t.Helper()
	if inside {
		return
	}
	if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("test in a user namespace cannot run: %s", unavailable)
	}
	t.Skipf("skipping test in a user namespace: %s", unavailable)
}
