// Package nodens gives a test a machine of its own: a network and mount
// namespace kept alive by a holder process (unshare, then sleep), entered
// by every command with nsenter, with its files reached through
// /proc/<holder>/root. Long-lived programs started in it are stopped by
// their PID, and when the test ends every process left in it (those in its
// network namespace and those in its cgroup root, such as containers) is
// killed and the cgroups removed.
package nodens

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holderLifetime bounds how long a node outlives a test killed before its
// cleanup ran.
const holderLifetime = 30 * time.Minute

// Node is a machine of a test's own.
type Node struct {
	// T is the test that sees the node's failures (On gives a subtest's
	// view).
	T testing.TB
	*machine
	// CgroupRoot is a cgroup path (the same in every hierarchy) whose
	// processes belong to the node and which teardown removes.
	CgroupRoot string
}

// machine is what every view of a node shares.
type machine struct {
	owner   testing.TB // the test the node lives as long as
	holder  *exec.Cmd
	pid     int
	netns   uint64   // inode of its network namespace
	env     []string // of every command run in it
	cgroups []string // CgroupRoot and those of AddCgroup
}

// upWait bounds a node's set-up script.
const upWait = 2 * time.Minute

// New starts a node whose holder runs script (sh -e) in fresh network and
// mount namespaces (private propagation) before it sleeps; commands run
// in it with env. It is torn down when the test ends. cgroupRoot may be
// empty (then only AddCgroup's cgroups are the node's).
func New(t testing.TB, script string, env []string, cgroupRoot string) *Node {
	t.Helper()
	full := script + fmt.Sprintf("echo ready\nexec sleep %d\n", int(holderLifetime.Seconds()))
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-ec", full)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	m := &machine{owner: t, holder: cmd, pid: cmd.Process.Pid, env: env}
	n := &Node{T: t, machine: m, CgroupRoot: cgroupRoot}
	if cgroupRoot != "" {
		m.cgroups = []string{cgroupRoot}
	}
	t.Cleanup(n.teardown)
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n') // EOF when the script failed: stderr says why
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("the node did not come up (%q):\n%s", line, stderr.String())
		}
	case <-time.After(upWait):
		t.Fatalf("the node's script did not end within %s (teardown ends it)", upWait)
	}
	if m.netns, err = netnsInode(m.pid); err != nil {
		t.Fatal(err)
	}
	return n
}

// On returns the node as subtest t sees it: failures are t's; the node,
// its daemons and its cgroups stay the test's that made it.
func (n *Node) On(t testing.TB) *Node {
	view := *n
	view.T = t
	return &view
}

// AddCgroup makes cgroup (a path, the same in every hierarchy) the node's
// too: its processes are killed and it is removed, with all below it,
// when the node is torn down. It returns cgroup.
func (n *Node) AddCgroup(cgroup string) string {
	n.cgroups = append(n.cgroups, cgroup)
	return cgroup
}

func netnsInode(pid int) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return 0, fmt.Errorf("network namespace of %d: %w", pid, err)
	}
	return st.Ino, nil
}

// PrependPath puts dir first on the PATH of the commands run in the node
// from now on (programs built for the test win over the distribution's).
func (n *Node) PrependPath(dir string) {
	for i, kv := range n.env {
		if rest, ok := strings.CutPrefix(kv, "PATH="); ok {
			n.env[i] = "PATH=" + dir + ":" + rest
		}
	}
}

// Path names a file of the node's mount namespace, seen from the test.
func (n *Node) Path(p string) string { return fmt.Sprintf("/proc/%d/root%s", n.pid, p) }

// WriteFile writes a file with mode on the node, creating its directory.
func (n *Node) WriteFile(p string, data []byte, mode os.FileMode) {
	n.T.Helper()
	if err := os.MkdirAll(filepath.Dir(n.Path(p)), 0o755); err != nil {
		n.T.Fatal(err)
	}
	if err := os.WriteFile(n.Path(p), data, mode); err != nil {
		n.T.Fatal(err)
	}
}

// command prepares a command run inside the node.
func (n *Node) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	full := append([]string{"--target", strconv.Itoa(n.pid), "--net", "--mount", "--", name}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Env = n.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs a command inside the node, bounded by timeout, and returns its
// combined output.
func (n *Node) Run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := n.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Must runs a command inside the node, bounded by two minutes, and fails
// the test if it fails.
func (n *Node) Must(name string, args ...string) string {
	n.T.Helper()
	out, err := n.Run(2*time.Minute, name, args...)
	if err != nil {
		n.T.Fatal(err)
	}
	return out
}

// Stdout is Must, returning only what the command wrote on stdout (for
// programs that warn on stderr).
func (n *Node) Stdout(name string, args ...string) string {
	n.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := n.command(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		n.T.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// WaitFor polls cond every 200 ms until it holds or timeout passes.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
