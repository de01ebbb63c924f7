package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// stateDirs get a fresh tmpfs in every node: whatever a runtime or a plugin
// writes there dies with the node.
var stateDirs = []string{"/run", "/var/lib/cni", "/etc/cni", "/opt/cni",
	"/var/lib/containers", "/var/lib/containerd", "/etc/containers"}

// plugins are the binaries every node needs in /opt/cni/bin.
var plugins = []string{"bridge", "host-local", "tuning", "portmap", "loopback"}

// holderLifetime bounds how long a node can outlive a test that was killed
// before its cleanup ran.
const holderLifetime = 30 * time.Minute

// node is a private network and mount namespace standing in for a machine:
// a holder process (`unshare --net --mount`) keeps it alive, commands enter
// it with nsenter, and files are reached through /proc/<holder>/root.
type node struct {
	t      *testing.T
	holder *exec.Cmd
	pid    int
	netns  uint64 // inode of the node's network namespace
	env    []string
	// cgroups are the cgroup parents of the test's containers (relative
	// to each hierarchy); teardown removes them.
	cgroups []string
}

// newNode starts a node with tmpfs over the state directories, the plugins
// of sandbox.Bin on /opt/cni/bin (read-only) and the cgroup hierarchies the
// sandbox's fresh sysfs hides. It is torn down, with every process left in
// it, when the test ends.
func newNode(t *testing.T) *node {
	t.Helper()
	sandbox.Require(t)
	bin := pluginDir(t)
	script, err := holderScript(bin)
	if err != nil {
		t.Fatalf("node setup: %v", err)
	}
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-ec", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting node: %v", err)
	}
	n := &node{t: t, holder: cmd, pid: cmd.Process.Pid, env: nodeEnv()}
	t.Cleanup(n.teardown)
	if err := waitReady(stdout, 30*time.Second); err != nil {
		t.Fatalf("node did not come up: %v\n%s", err, stderr.String())
	}
	ino, err := netnsInode(n.pid)
	if err != nil {
		t.Fatalf("node network namespace: %v", err)
	}
	n.netns = ino
	return n
}

// pluginDir returns the absolute directory of the plugin binaries and fails
// the test, naming them, when some are missing.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := sandbox.Bin(t)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(moduleRoot(t), dir)
	}
	var missing []string
	for _, p := range plugins {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("plugins %v missing from %s (run `make build`)", missing, dir)
	}
	return dir
}

// moduleRoot is the directory of go.mod, found upwards from the test's
// working directory (the package directory under `go test`).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	t.Fatalf("no go.mod above %s", dir)
	return ""
}

// holderScript is the shell script the holder runs inside the fresh
// namespaces before it sleeps.
func holderScript(bin string) (string, error) {
	cg, err := cgroupScript()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range stateDirs {
		fmt.Fprintf(&b, "mkdir -p %s\nmount -t tmpfs -o mode=0755 tmpfs %s\n", d, d)
	}
	b.WriteString("mkdir -p /run/netns /run/lock /opt/cni/bin /etc/cni/net.d\n")
	fmt.Fprintf(&b, "mount --bind %s /opt/cni/bin\nmount -o remount,bind,ro /opt/cni/bin\n", shellQuote(bin))
	b.WriteString(cg)
	b.WriteString("ip link set lo up\necho ready\n")
	fmt.Fprintf(&b, "exec sleep %d\n", int(holderLifetime.Seconds()))
	return b.String(), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitReady reads the holder's output until its "ready" line.
func waitReady(r io.Reader, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if sc.Text() == "ready" {
				done <- nil
				return
			}
		}
		done <- fmt.Errorf("holder exited before it was ready")
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("not ready after %v", timeout)
	}
}

func nodeEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8",
	}
}

func netnsInode(pid int) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// path names a file of the node's mount namespace, seen from the test.
func (n *node) path(p string) string { return fmt.Sprintf("/proc/%d/root%s", n.pid, p) }

// writeFile writes a file on the node, creating its directory.
func (n *node) writeFile(p string, data []byte) {
	n.t.Helper()
	if err := os.MkdirAll(filepath.Dir(n.path(p)), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(n.path(p), data, 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// command prepares a command run inside the node.
func (n *node) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	full := append([]string{"--target", strconv.Itoa(n.pid), "--net", "--mount", "--", name}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Env = n.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a command inside the node, bounded by timeout, and returns its
// combined output.
func (n *node) run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := n.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// must runs a command inside the node and fails the test if it fails.
func (n *node) must(name string, args ...string) string {
	n.t.Helper()
	out, err := n.run(2*time.Minute, name, args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

// teardown kills every process left in the node, then the holder, and
// waits for them: no daemon, shim or cleanup process outlives the test.
func (n *node) teardown() {
	for _, pid := range n.processes() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			n.t.Logf("killed process %d (%s) left in the node", pid, comm(pid))
		}
	}
	eventually(10*time.Second, func() bool { return len(n.processes()) == 0 })
	n.removeCgroups()
	if err := n.holder.Process.Kill(); err != nil {
		n.t.Logf("killing node holder %d: %v", n.pid, err)
	}
	_ = n.holder.Wait() // it was killed: the error only says so
}

// processes lists the processes of the node other than the holder: those
// in its network namespace (runtimes, shims, cleanup processes) and those
// in the test's cgroups (containers, which have namespaces of their own).
// They all descend from commands this test started.
func (n *node) processes() []int {
	seen := map[int]bool{n.pid: true, os.Getpid(): true}
	var pids []int
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		n.t.Logf("listing processes: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ino, err := netnsInode(pid); err == nil && ino == n.netns {
			add(pid)
		}
	}
	for _, pid := range n.cgroupProcs() {
		add(pid)
	}
	return pids
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)) // best effort, for a log line
	return strings.TrimSpace(string(b))
}

// eventually polls cond every 200 ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
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
