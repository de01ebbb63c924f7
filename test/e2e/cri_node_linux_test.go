package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/test/nodens"
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
	daemon  *nodens.Daemon
	binDir  string // CNI directories of the running configuration
	confDir string
}

// on returns the node as seen by subtest t: failures and cleanups of the
// pods it runs are t's, the runtime stays the whole test's.
func (n *criNode) on(t *testing.T) *criNode {
	view := *n
	view.node = &node{n.Node.On(t)}
	t.Cleanup(func() {
		if t.Failed() && view.daemon != nil {
			t.Logf("the last lines %s wrote:\n%s", view.flavor.name(), view.daemon.Tail(40))
		}
	})
	return &view
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
	n.Must("ip", "link", "add", "eth0", "type", "bridge")
	n.Must("ip", "addr", "add", nodeAddrCIDR, "dev", "eth0")
	n.Must("ip", "link", "set", "eth0", "up")
	n.writeRecorders()
	n.startCRI(rt.binDir(), criConfDir)
	rt.importImages(n)
	return n
}

// useCRI makes sure the runtime runs with the given CNI bin and
// configuration directories, restarting it (SIGTERM) if it runs with others.
func (n *criNode) useCRI(binDir, confDir string) {
	n.T.Helper()
	if n.daemon != nil && !n.daemon.Exited() && n.binDir == binDir && n.confDir == confDir {
		return
	}
	if n.daemon != nil {
		n.daemon.Stop()
	}
	n.startCRI(binDir, confDir)
}

// startCRI starts the runtime with the given CNI bin and configuration
// directories (stopped, by PID, when the whole test ends) and waits until
// CRI reports the runtime and network ready.
func (n *criNode) startCRI(binDir, confDir string) {
	n.T.Helper()
	n.binDir, n.confDir = binDir, confDir
	d := n.flavor.start(n, binDir, confDir)
	n.daemon = d
	socket := n.flavor.socket()
	ok := nodens.WaitFor(60*time.Second, func() bool {
		_, err := os.Stat(n.Path(socket))
		return err == nil || d.Exited()
	})
	if !ok || d.Exited() {
		n.T.Fatalf("%s did not make %s:\n%s", n.flavor.name(), socket, d.Output())
	}
	c, err := dialCRI(n.Path(socket))
	if err != nil {
		n.T.Fatal(err)
	}
	n.root.Cleanup(func() { c.conn.Close() })
	n.cri = c
	var last error
	if !nodens.WaitFor(60*time.Second, func() bool { last = n.cri.ready(); return last == nil }) {
		n.T.Fatalf("CRI of %s not ready: %v\n%s", n.flavor.name(), last, d.Output())
	}
}

// killCRI kills the runtime with SIGKILL, as a crash or the OOM killer does.
func (n *criNode) killCRI() {
	n.T.Helper()
	if err := n.daemon.Signal(syscall.SIGKILL); err != nil {
		n.T.Fatalf("killing %s: %v", n.flavor.name(), err)
	}
	if !n.daemon.Wait(30 * time.Second) {
		n.T.Fatalf("%s still running 30 s after SIGKILL", n.flavor.name())
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
	n.T.Helper()
	pauseRoot := n.T.TempDir()
	if err := os.MkdirAll(filepath.Join(pauseRoot, "bin"), 0o755); err != nil {
		n.T.Fatal(err)
	}
	bb, err := os.ReadFile(staticBusybox(n.T))
	if err != nil {
		n.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pauseRoot, "bin", "busybox"), bb, 0o755); err != nil {
		n.T.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep"} {
		if err := os.Symlink("busybox", filepath.Join(pauseRoot, "bin", applet)); err != nil {
			n.T.Fatal(err)
		}
	}
	rootfs := busyboxRootfs(n.T)
	// On the node's own tmpfs: the test's TMPDIR may be hidden there.
	const archive = "/run/e2e/images.tar"
	n.WriteFile(archive, imageArchive(n.T, []imageSpec{
		{Ref: pauseImage, Rootfs: pauseRoot, Cmd: pauseCommand},
		{Ref: busyboxImage, Rootfs: rootfs, Cmd: []string{"/bin/sh"}},
		{Ref: webImage, Rootfs: rootfs, Cmd: []string{"/bin/httpd", "-f", "-p", "80", "-h", "/www"}},
	}), 0o644)
	return archive
}

// ctrImport imports the test's images into CRI's namespace with ctr, where
// the sandbox image setting names one.
func (n *criNode) ctrImport() {
	n.T.Helper()
	archive := n.imageArchiveOnNode()
	n.Must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "import", archive)
	out := n.Must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "ls", "-q")
	for _, ref := range []string{pauseImage, busyboxImage, webImage} {
		if !strings.Contains(out, ref) {
			n.T.Fatalf("image %s not imported; ctr images ls:\n%s", ref, out)
		}
	}
}

// writeRecorders fills recorderDir with one wrapper per plugin: it appends
// the plugin's name, the verb and CNI_ARGS as the runtime sent them to
// recorderLog, drops IgnoreUnknown (containerd always adds it), and runs
// our plugin with what is left.
func (n *criNode) writeRecorders() {
	n.T.Helper()
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
		n.WriteFile(recorderDir+"/"+p, []byte(script), 0o644)
		if err := os.Chmod(n.Path(recorderDir+"/"+p), 0o755); err != nil {
			n.T.Fatal(err)
		}
	}
}
