package k8s

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

	"cnisuite/test/crinode"
)

// Addresses of the node: its "NIC" (a port-less bridge, as the kernel here
// has no dummy driver), the pods' range of examples/kubernetes.conflist and
// the Services' range.
const (
	nodeName     = "node1"
	nodeAddr     = "192.0.2.10"
	nodeAddrCIDR = nodeAddr + "/24"
	podCIDR      = "10.244.1.0/24"
	serviceCIDR  = "10.96.0.0/24"
)

// nodeDirs get a fresh tmpfs in the node: whatever the cluster writes
// there dies with it.
var nodeDirs = []string{"/run", "/var/lib/cni", "/etc/cni", "/opt/cni", "/var/lib/containerd",
	"/var/lib/kubelet", "/var/lib/etcd", "/etc/kubernetes", "/var/log/pods", "/var/log/containers"}

// node is the machine of the cluster: a network and mount namespace kept
// by a holder process (unshare, then sleep), entered with nsenter; its
// files are reached through /proc/<holder>/root.
type node struct {
	t      *testing.T
	holder *exec.Cmd
	pid    int
	netns  uint64   // inode of its network namespace
	env    []string // of every command run in it
	cgroup string   // the pods' cgroup root, removed from every hierarchy at teardown
}

// newNode starts the node: tmpfs over nodeDirs, the plugins on
// /opt/cni/bin (read-only), the cgroup hierarchies the sandbox's sysfs
// hides, every global setting of masks covered by a file of its own, and
// the node's address. It is torn down, with every process left in it,
// when the test ends.
func newNode(t *testing.T, plugins string, path []string, masks []mask) *node {
	t.Helper()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	script := holderScript(plugins, crinode.CgroupMounts(string(data)), masks)
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-ec", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	n := &node{t: t, holder: cmd, pid: cmd.Process.Pid, cgroup: fmt.Sprintf("/cnisuite-k8s-%d", os.Getpid())}
	n.env = []string{"PATH=" + strings.Join(append(path, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"), ":"),
		"HOME=/root", "LANG=C.UTF-8", "KUBECONFIG=" + adminConf}
	t.Cleanup(n.teardown)
	line, _ := bufio.NewReader(stdout).ReadString('\n') // EOF when the script failed: stderr says why
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("the node did not come up (%q):\n%s", line, stderr.String())
	}
	if n.netns, err = netnsInode(n.pid); err != nil {
		t.Fatal(err)
	}
	return n
}

// holderScript is what the holder runs in its fresh namespaces before it
// sleeps for at most half an hour (a killed test leaves nothing for long).
func holderScript(plugins, cgroups string, masks []mask) string {
	var b strings.Builder
	for _, d := range nodeDirs {
		fmt.Fprintf(&b, "mkdir -p %[1]s\nmount -t tmpfs -o mode=0755 tmpfs %[1]s\n", d)
	}
	b.WriteString("mkdir -p /run/netns /run/lock /opt/cni/bin /etc/cni/net.d /run/masks\n")
	fmt.Fprintf(&b, "mount --bind %s /opt/cni/bin\nmount -o remount,bind,ro /opt/cni/bin\n", quote(plugins))
	b.WriteString(cgroups)
	b.WriteString(maskScript(masks))
	fmt.Fprintf(&b, "ip link set lo up\nip link add eth0 type bridge\nip addr add %s dev eth0\n", nodeAddrCIDR)
	b.WriteString("ip link set eth0 up\nip route add default via 192.0.2.1 dev eth0\n")
	b.WriteString("echo ready\nexec sleep 1800\n")
	return b.String()
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func netnsInode(pid int) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return 0, fmt.Errorf("network namespace of %d: %w", pid, err)
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
	if err := os.WriteFile(n.path(p), data, 0o600); err != nil {
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

// stdout runs a command inside the node, bounded by two minutes, and
// returns what it wrote on stdout (ctr warns on stderr) or fails the test.
func (n *node) stdout(name string, args ...string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := n.command(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		n.t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
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

// teardown kills every process left in the node (daemons in its network
// namespace, containers in its pods' cgroups), then the holder, and
// removes the pods' cgroups.
func (n *node) teardown() {
	for _, pid := range n.processes() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			n.t.Logf("killed process %d (%s) left in the node", pid, comm(pid))
		}
	}
	waitFor(10*time.Second, func() bool { return len(n.processes()) == 0 })
	n.removeCgroups()
	if err := n.holder.Process.Kill(); err != nil {
		n.t.Logf("killing the node's holder %d: %v", n.pid, err)
	}
	_ = n.holder.Wait() // it was killed: the error only says so
}

// processes lists the node's processes other than the holder and the test.
func (n *node) processes() []int {
	seen := map[int]bool{n.pid: true, os.Getpid(): true}
	var pids []int
	entries, _ := os.ReadDir("/proc") // always readable; an error leaves nothing to kill
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || seen[pid] {
			continue
		}
		if ino, err := netnsInode(pid); err == nil && ino == n.netns {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	for _, pid := range n.cgroupProcs() {
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

func comm(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)) // gone meanwhile: no name, for a log line
	return strings.TrimSpace(string(data))
}

// waitFor polls cond every 200 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
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
