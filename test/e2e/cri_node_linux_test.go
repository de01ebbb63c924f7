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
	criConfig    = "/run/e2e/containerd.toml"
	criConfDir   = "/etc/cni/net.d"
	dualConfDir  = "/etc/cni/dual-stack.d"
	recorderDir  = "/run/e2e/cni-record"
	recorderLog  = "/run/e2e/cni-args.log"
	nodeAddrCIDR = "192.0.2.10/24"
	nodeAddr     = "192.0.2.10"
)

// criNode is a node whose containerd runs its CRI plugin with our plugins
// as the CNI bin dir, driven over the CRI socket as the kubelet drives it.
type criNode struct {
	*node
	*criRuntime
	root         *testing.T // the test that owns the node and containerd
	cgroupParent string     // the pods' cgroup parent, removed at teardown
}

// criRuntime is the containerd of a node, shared by its subtests' views.
type criRuntime struct {
	cri     *criClient
	daemon  *proc
	binDir  string // CNI directories of the running configuration
	confDir string
}

// on returns the node as seen by subtest t: failures and cleanups of the
// pods it runs are t's, containerd stays the whole test's.
func (n *criNode) on(t *testing.T) *criNode {
	view := *n
	nd := *n.node
	nd.t = t
	view.node = &nd
	return &view
}

// newCRINode starts a node with an address of its own (on an interface
// standing in for the node's NIC), the images imported, the conflists
// installed and containerd answering CRI calls.
func newCRINode(t *testing.T) *criNode {
	t.Helper()
	n := &criNode{node: newNode(t), criRuntime: &criRuntime{}, root: t}
	needTools(t, "containerd", "ctr", "containerd-shim-runc-v2", "runc", "curl", "conntrack")
	n.cgroupParent = n.cgroup(uniqueName("cri"))
	// The kernel here has no dummy driver: a port-less bridge carries the
	// node's address, and no veth, so the leftover checks see only pods'.
	n.must("ip", "link", "add", "eth0", "type", "bridge")
	n.must("ip", "addr", "add", nodeAddrCIDR, "dev", "eth0")
	n.must("ip", "link", "set", "eth0", "up")

	n.install(map[string]string{
		criConfDir + "/10-kubernetes.conflist":  "../../examples/kubernetes.conflist",
		dualConfDir + "/10-dual-stack.conflist": "testdata/cri/dual-stack.conflist",
	})
	n.writeRecorders()
	n.startCRI("/opt/cni/bin", criConfDir)
	n.importImages()
	return n
}

// useCRI makes sure containerd runs with the given CNI bin and
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

// startCRI writes containerd's configuration with the given CNI bin and
// configuration directories, starts containerd, stops it by PID when the
// whole test ends, and waits until CRI reports the runtime and network ready.
func (n *criNode) startCRI(binDir, confDir string) {
	n.t.Helper()
	n.binDir, n.confDir = binDir, confDir
	tmpl, err := os.ReadFile("testdata/cri/config.toml")
	if err != nil {
		n.t.Fatal(err)
	}
	cfg := strings.NewReplacer("@CNI_BIN_DIR@", binDir, "@CNI_CONF_DIR@", confDir).Replace(string(tmpl))
	n.writeFile(criConfig, []byte(cfg))
	d := n.start("containerd", "--config", criConfig)
	n.root.Cleanup(d.stop)
	n.daemon = d
	ok := eventually(30*time.Second, func() bool {
		_, err := n.run(10*time.Second, "ctr", "--address", containerdSock, "version")
		return err == nil || d.exited()
	})
	if !ok || d.exited() {
		n.t.Fatalf("containerd did not answer on %s:\n%s", containerdSock, d.out)
	}
	c, err := dialCRI(n.path(containerdSock))
	if err != nil {
		n.t.Fatal(err)
	}
	n.root.Cleanup(func() { c.conn.Close() })
	n.cri = c
	var last error
	if !eventually(30*time.Second, func() bool { last = n.cri.ready(); return last == nil }) {
		n.t.Fatalf("CRI not ready: %v\n%s", last, d.out)
	}
}

// killCRI kills containerd with SIGKILL, as a crash or the OOM killer does.
func (n *criNode) killCRI() {
	n.t.Helper()
	if err := n.daemon.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		n.t.Fatalf("killing containerd: %v", err)
	}
	if !n.daemon.wait(30 * time.Second) {
		n.t.Fatal("containerd still running 30 s after SIGKILL")
	}
}

// importImages builds the pause and busybox images from the static busybox
// and imports them into CRI's namespace, where sandbox_image names one.
func (n *criNode) importImages() {
	n.t.Helper()
	pauseRoot := n.t.TempDir()
	if err := os.MkdirAll(filepath.Join(pauseRoot, "bin"), 0o755); err != nil {
		n.t.Fatal(err)
	}
	bb, err := os.ReadFile(staticBusybox(n.t))
	if err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pauseRoot, "bin", "sleep"), bb, 0o755); err != nil {
		n.t.Fatal(err)
	}
	// On the node's own tmpfs: the test's TMPDIR may be hidden there.
	const archive = "/run/e2e/images.tar"
	n.writeFile(archive, imageArchive(n.t, []imageSpec{
		{ref: pauseImage, rootfs: pauseRoot, cmd: []string{"/bin/sleep", "2147483647"}},
		{ref: busyboxImage, rootfs: busyboxRootfs(n.t), cmd: []string{"/bin/sh"}},
	}))
	n.must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "import", archive)
	out := n.must("ctr", "--address", containerdSock, "-n", "k8s.io", "images", "ls", "-q")
	for _, ref := range []string{pauseImage, busyboxImage} {
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
