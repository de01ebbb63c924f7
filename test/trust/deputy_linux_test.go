package trust

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// deputyEnv carries the deputy's task to the re-run test binary: the
// index of the link to ask for, then the listeners to ask.
const deputyEnv = "CNISUITE_TRUST_DEPUTY"

// TestMain runs the deputy when this binary was started as one.
func TestMain(m *testing.M) {
	if task, ok := os.LookupEnv(deputyEnv); ok {
		os.Exit(deputyMain(task))
	}
	os.Exit(m.Run())
}

// unprivileged returns a command that runs args as uid 0 with every
// capability dropped (bounding, inheritable and ambient sets empty): root
// as a hostNetwork pod or a --network host container runs, without
// CAP_NET_ADMIN.
func unprivileged(args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"}, args...)...)
}

// askListeners runs the deputy: this test binary, unprivileged, asks every
// listener (see listeners) to delete the link with index victim in its
// network namespace, in the protocol the sitter spoke, and in a few more
// shapes. It returns the deputy's report.
func askListeners(t *testing.T, victim int, names []string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := unprivileged(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), deputyEnv+"="+strings.Join(append([]string{strconv.Itoa(victim)}, names...), "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deputy: %v\n%s", err, out)
	}
	return string(out)
}

// deputyMain is the unprivileged side: it proves it lacks CAP_NET_ADMIN
// (deleting the victim itself is refused), then asks each listener.
// Status 0 with a report on stdout; 3 when it holds CAP_NET_ADMIN after
// all (the test would prove nothing).
func deputyMain(task string) int {
	lines := strings.Split(task, "\n")
	victim, err := strconv.Atoi(lines[0])
	if err != nil {
		fmt.Println("deputy: bad task", err)
		return 2
	}
	if err := deleteLink(victim); !errors.Is(err, unix.EPERM) {
		fmt.Printf("deputy: deleting link %d itself: %v, want EPERM: this process holds CAP_NET_ADMIN\n", victim, err)
		return 3
	}
	for _, l := range lines[1:] {
		if name, ok := strings.CutPrefix(l, "unix "); ok && !strings.HasPrefix(name, "inode ") {
			fmt.Printf("%s: %s\n", name, askUnix(name, victim))
		}
	}
	return 0
}

// askUnix connects to the Unix socket name ("@x": abstract) as a
// SOCK_SEQPACKET and then a SOCK_STREAM client, sends "d<index>" with its
// own network namespace's descriptor (the sitter's delete request) and
// reports the answer.
func askUnix(name string, index int) string {
	path := name
	if strings.HasPrefix(name, "@") {
		path = "\x00" + name[1:]
	}
	var report []string
	for _, typ := range []int{unix.SOCK_SEQPACKET, unix.SOCK_STREAM} {
		report = append(report, askOnce(typ, path, index))
	}
	return strings.Join(report, "; ")
}

func askOnce(typ int, path string, index int) string {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return "connect: " + err.Error()
	}
	netns, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "netns: " + err.Error()
	}
	defer unix.Close(netns)
	if err := unix.Sendmsg(fd, []byte(fmt.Sprintf("d%d", index)), unix.UnixRights(netns), nil, 0); err != nil {
		return "send: " + err.Error()
	}
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) // without it, a read may wait longer
	buf := make([]byte, 256)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return "read: " + err.Error()
	}
	return fmt.Sprintf("answered %q", bytes.TrimSpace(buf[:max(n, 0)]))
}

// deleteLink deletes the link with index.
//
// Equivalent to: ip link del dev <name of index>
func deleteLink(index int) error {
	return netlink.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index}})
}
