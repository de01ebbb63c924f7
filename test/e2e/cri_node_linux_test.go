package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Paths on the CRI test node.
const (
	criConfDir   = "/etc/cni/net.d"
	dualConfDir  = "/etc/cni/dual-stack.d"
	recorderDir  = "/run/e2e/cni-record"
	recorderLog  = "/run/e2e/cni-args.log"
	nodeAddrCIDR = "192.0.2.10/24"
	nodeAddr     = "192.0.2.10"
)

// criNode is a node whose CRI runtime (containerd's CRI plugin, or CRI-O)
// runs with our plugins as the CNI bin dir, driven over the CRI socket as
// the kubelet drives it.
type criNode struct {
	*node
	*criRuntime
	root         *testing.T // the test that owns the node and containerd
	cgroupParent string     // the pods' cgroup parent, removed at teardown
}

// criRuntime is the CRI runtime of a node, shared by its subtests' views.
type criRuntime struct {
	flavor  criFlavor
	cri     *criClient
	daemon  *proc
	binDir  string // CNI directories of the running configuration
	confDir string
}

// on returns the node as seen by subtest t: failures and cleanups of the
// pods it runs are t's, the runtime stays the whole test's.
func (n *criNode) on(t *testing.T) *criNode {
	view := *n
	nd := *n.node
	nd.t = t
	view.node = &nd
	t.Cleanup(func() {
		if t.Failed() && view.daemon != nil {
			t.Logf("the last lines %s wrote:\n%s", view.flavor.name(), lastLines(view.daemon.out.String(), 40))
		}
	})
	return &view
}

// lastLines is the end of a daemon's output, for a failure message.
func lastLines(out string, count int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-count):], "\n")
}

// newCRINode starts a node with an address of its own (on an interface
// standing in for the node's NIC), the images imported, the conflists
// installed and the runtime rt answering CRI calls.
func newCRINode(t *testing.T, rt criFlavor) *criNode {
	t.Helper()
	n := &criNode{node: newNode(t), criRuntime: &criRuntime{flavor: rt}, root: t}
	needTools(t, "runc", "curl", "conntrack")
	rt.setUp(n)
	n.cgroupParent = n.cgroup(uniqueName("cri"))
	// The kernel here has no dummy driver: a port-less bridge carries the
	// node's address, and no veth, so the leftover checks see only pods'.
	n.must("ip", "link", "add", "eth0", "type", "bridge")
	n.must("ip", "addr", "add", nodeAddrCIDR, "dev", "eth0")
	n.must("ip", "link", "set", "eth0", "up")
	n.writeRecorders()
	n.startCRI(rt.binDir(), criConfDir)
	rt.importImages(n)
	return n
}

// useCRI makes sure the runtime runs with the given CNI bin and
// configuration directories, restarting it (SIGTERM) if it runs with others.
func (n *criNode) useCRI(binDir, confDir string) {
	n.t.Helper()
	if n.daemon != nil && !n.daemon.exited() && n.binDir == binDir && n.confDir == confDir {
		return
	}
	if n.daemon != nil {
		n.daemon.stop()
	}
	n.startCRI(binDir, confDir)
}

// startCRI starts the runtime with the given CNI bin and configuration
// directories, stops it by PID when the whole test ends, and waits until
// CRI reports the runtime and network ready.
func (n *criNode) startCRI(binDir, confDir string) {
	n.t.Helper()
	n.binDir, n.confDir = binDir, confDir
	d := n.flavor.start(n, binDir, confDir)
	n.root.Cleanup(d.stop)
	n.daemon = d
	socket := n.flavor.socket()
	ok := eventually(60*time.Second, func() bool {
		_, err := os.Stat(n.path(socket))
		return err == nil || d.exited()
	})
	if !ok || d.exited() {
		n.t.Fatalf("%s did not make %s:\n%s", n.flavor.name(), socket, d.out)
	}
	c, err := dialCRI(n.path(socket))
	if err != nil {
		n.t.Fatal(err)
	}
	n.root.Cleanup(func() { c.conn.Close() })
	n.cri = c
	var last error
	if !eventually(60*time.Second, func() bool { last = n.cri.ready(); return last == nil }) {
		n.t.Fatalf("CRI of %s not ready: %v\n%s", n.flavor.name(), last, d.out)
	}
}

// killCRI kills the runtime with SIGKILL, as a crash or the OOM killer does.
func (n *criNode) killCRI() {
	n.t.Helper()
	if err := n.daemon.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		n.t.Fatalf("killing %s: %v", n.flavor.name(), err)
	}
	if !n.daemon.wait(30 * time.Second) {
		n.t.Fatalf("%s still running 30 s after SIGKILL", n.flavor.name())
	}
}

// pauseCommand holds the pod's namespaces as the real pause does, and, as
// it does, exits on SIGTERM (a PID 1 without a handler ignores it, and
// CRI-O then waits minutes before it kills the infra container).
var pauseCommand = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait; done"}

// imageArchiveOnNode writes the test's images — pause, busybox and web
// (busybox serving the page by default) — as a docker-archive on the node
// and returns its path there.
func (n *criNode) imageArchiveOnNode() string {
	n.t.Helper()
	pauseRoot := n.t.TempDir()
	if err := os.MkdirAll(filepath.Join(pauseRoot, "bin"), 0o755); err != nil {
		n.t.Fatal(err)
	}
	bb, err := os.ReadFile(staticBusybox(n.t))
	if err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pauseRoot, "bin", "busybox"), bb, 0o755); err != nil {
		n.t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep"} {
		if err := os.Symlink("busybox", filepath.Join(pauseRoot, "bin", applet)); err != nil {
			n.t.Fatal(err)
		}
	}
	rootfs := busyboxRootfs(n.t)
	// On the node's own tmpfs: the test's TMPDIR may be hidden there.
	const archive = "/run/e2e/images.tar"
	n.writeFile(archive, imageArchive(n.t, []imageSpec{
		{Ref: pauseImage, Rootfs: pauseRoot, Cmd: pauseCommand},
		{Ref: busyboxImage, Rootfs: rootfs, Cmd: []string{"/bin/sh"}},
		{Ref: webImage, Rootfs: rootfs, Cmd: []string{"/bin/httpd", "-f", "-p", "80", "-h", "/www"}},
	}))
	return archive
}

// ctrImport imports the test's images into CRI's namespace with ctr, where
// the sandbox image setting names one.
func (n *criNode) ctrImport() {
	n.t.Helper()
	archive := n.imageArchiveOnNode()
	n.must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "import", archive)
	out := n.must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "ls", "-q")
	for _, ref := range []string{pauseImage, busyboxImage, webImage} {
		if !strings.Contains(out, ref) {
			n.t.Fatalf("image %s not imported; ctr images ls:\n%s", ref, out)
		}
	}
}

// writeRecorders fills recorderDir with one wrapper per plugin: it appends
// the plugin's name, the verb and CNI_ARGS as the runtime sent them to
// recorderLog, drops IgnoreUnknown (containerd always adds it), and runs
// our plugin with what is left.
func (n *criNode) writeRecorders() {
	n.t.Helper()
	for _, p := range plugins {
		script := fmt.Sprintf(`#!/bin/sh
args=
IFS=';'
for kv in $CNI_ARGS; do
	case "$kv" in IgnoreUnknown=*) ;; *) args="${args:+$args;}$kv" ;; esac
done
unset IFS
printf '%%s %%s sent=%%s passed=%%s\n' %s "$CNI_COMMAND" "$CNI_ARGS" "$args" >>%s
export CNI_ARGS="$args"
exec /opt/cni/bin/%s "$@"
`, p, recorderLog, p)
		n.writeFile(recorderDir+"/"+p, []byte(script))
		if err := os.Chmod(n.path(recorderDir+"/"+p), 0o755); err != nil {
			n.t.Fatal(err)
		}
	}
}
