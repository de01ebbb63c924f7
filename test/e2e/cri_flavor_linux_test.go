package e2e

import (
	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
)

// criFlavor is what differs between the CRI runtimes a criNode drives:
// where their programs are, how they are configured and started, and how
// the test's images get into their store.
type criFlavor interface {
	// name names the runtime and its version in logs and failures.
	name() string
	// setUp readies the node before the first start: the runtime's
	// programs on the node's PATH, the conflists and fixed files.
	setUp(n *criNode)
	// binDir is the CNI bin dir the runtime starts with.
	binDir() string
	// start writes the runtime's configuration for the CNI directories
	// and starts it; startCRI then waits for its socket.
	start(n *criNode, binDir, confDir string) *nodens.Daemon
	// socket is the CRI socket on the node.
	socket() string
	// importImages puts pauseImage, busyboxImage and webImage into the
	// runtime's store: no registry is reachable.
	importImages(n *criNode)
	// hostPortsByPortmap tells whether the runtime passes host ports to
	// CNI (portMappings, for portmap) rather than mapping them itself.
	hostPortsByPortmap() bool
	// critest names the runtime's default cgroup parent, which critest's
	// pods use, and the critest specs to skip (a regular expression, or
	// "") because the runtime fails them for reasons of its own.
	critest() (cgroupParent, skip string)
}

// webImage is busybox serving the page on port 80 by default, for
// critest's port-mapping specs, which start a web server by image alone.
const webImage = "cnisuite.test/web:e2e"

// containerd16 is Debian 12's containerd 1.6 with its CRI plugin, on the
// conflists with cniVersion 1.0.0 (it rejects 1.1.0 results) and the verb
// recorders as its CNI bin dir.
type containerd16 struct{}

func (containerd16) name() string   { return "containerd 1.6 (Debian 12)" }
func (containerd16) binDir() string { return verbsDir }
func (containerd16) socket() string { return containerdSock }

func (containerd16) hostPortsByPortmap() bool { return true }

func (containerd16) critest() (string, string) { return "/k8s.io", "" }

func (containerd16) setUp(n *criNode) {
	needTools(n.T, "containerd", "ctr", "containerd-shim-runc-v2")
	n.install(map[string]string{
		criConfDir + "/10-kubernetes.conflist":  "../../examples/kubernetes.conflist",
		dualConfDir + "/10-dual-stack.conflist": "testdata/cri/dual-stack.conflist",
	})
	n.writeVerbRecorders()
}

func (containerd16) start(n *criNode, binDir, confDir string) *nodens.Daemon {
	return startContainerd(n, crinode.Containerd16, binDir, confDir)
}

func (containerd16) importImages(n *criNode) { n.ctrImport() }

// containerdConfig is where containerd's configuration is written on the node.
const containerdConfig = "/run/e2e/containerd.toml"

// startContainerd fills the CNI directories into a containerd
// configuration of package crinode and starts containerd with it.
func startContainerd(n *criNode, config, binDir, confDir string) *nodens.Daemon {
	n.T.Helper()
	cfg, err := crinode.ContainerdConfig(config, binDir, confDir)
	if err != nil {
		n.T.Fatal(err)
	}
	n.WriteFile(containerdConfig, []byte(cfg), 0o644)
	return n.Start("containerd", "--config", containerdConfig)
}
