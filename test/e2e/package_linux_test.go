package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cnisuite/test/release/debroot"
	"cnisuite/test/sandbox"
)

// TestPodmanPackage installs Debian's containernetworking-plugins and then
// our packages with dpkg into a throwaway root, puts that root's
// /usr/lib/cni over the node's, and runs a busybox web server with `podman
// run -p` on podman's default network, Debian's 87-podman-bridge.conflist
// (bridge, portmap, firewall, tuning): the page comes through the host
// port, our bridge and portmap and the reference's firewall have each put
// their rules in, and `podman rm` leaves nothing.
func TestPodmanPackage(t *testing.T) {
	n := newNode(t)
	needTools(t, "podman", "runc", "conmon", "curl", "dpkg", "iptables", "nft")
	root := debroot.New(t)
	root.Install(debroot.ReferenceDeb(t))
	suite := debroot.BuildSuite(t, sandbox.ModuleRoot(t), "v0.0.0-e2e")
	root.Install(suite.Tools, suite.Plugins)
	n.Must("mount", "--bind", root.Path("usr/lib/cni"), "/usr/lib/cni")
	n.Must("mount", "-o", "remount,bind,ro", "/usr/lib/cni")
	if out := n.Must("ls", "/usr/lib/cni"); !strings.Contains(out, "firewall") || !strings.Contains(out, "bandwidth") {
		t.Fatalf("/usr/lib/cni of the node holds:\n%s\nwant the reference's other plugins beside ours", out)
	}
	if out, err := n.Run(time.Minute, "/usr/lib/cni/bridge"); !strings.Contains(out, "cnisuite v0.0.0-e2e") {
		t.Fatalf("/usr/lib/cni/bridge of the node: %v %q, want ours", err, out)
	}
	n.install(map[string]string{
		"/etc/containers/containers.conf":          "testdata/package/containers.conf",
		"/etc/containers/storage.conf":             "testdata/podman/storage.conf",
		"/etc/containers/policy.json":              "testdata/podman/policy.json",
		"/etc/cni/net.d/87-podman-bridge.conflist": filepath.Join(sandbox.ModuleRoot(t), "test/release/testdata/87-podman-bridge.conflist"),
	})
	if out := n.Must("podman", "network", "ls", "--format", "{{.Name}} {{.Driver}}"); !strings.Contains(out, "podman bridge") {
		t.Fatalf("podman does not see its default network:\n%s", out)
	}

	name := uniqueName("pkg-web")
	rootfs := busyboxRootfs(t)
	// No --network: podman's default network.
	id := strings.TrimSpace(n.Must("podman", "run", "-d", "--name", name,
		"--cgroup-parent", n.cgroup(name), "-p", "8080:80", "--rootfs", rootfs,
		"/bin/httpd", "-f", "-p", "80", "-h", "/www"))
	t.Cleanup(func() { _, _ = n.Run(time.Minute, "podman", "rm", "-f", "-t", "0", name) }) // after a failure only
	pid := strings.TrimSpace(n.Must("podman", "inspect", "--format", "{{.State.Pid}}", name))
	if _, err := strconv.Atoi(pid); err != nil {
		t.Fatalf("podman inspect: pid %q", pid)
	}
	ip := n.containerAddr(pid)
	requireIn(t, ip, "10.88.0.0/16")
	n.fetch("http://127.0.0.1:8080/")
	n.fetch("http://10.88.0.1:8080/")
	n.requireAttached(id, ip.String())
	// The reference's firewall allows the pod's traffic in its own chain
	// of table filter; our bridge and portmap, without backend keys on a
	// node whose nat table held nothing when the network's first pod
	// came, write nftables chains of ours, and nothing in iptables' nat.
	if out := n.Must("iptables", "-S", "CNI-FORWARD"); !strings.Contains(out, ip.String()) {
		t.Errorf("iptables -S CNI-FORWARD:\n%s\nwant the reference firewall's rules for %s", out, ip)
	}
	if out := n.Must("nft", "list", "ruleset"); !strings.Contains(out, "table ip cnisuite_masq") || !strings.Contains(out, "table ip cnisuite_portmap") {
		t.Errorf("nft list ruleset:\n%s\nwant our tables cnisuite_masq and cnisuite_portmap", out)
	}
	if out := n.Must("iptables", "-t", "nat", "-S"); strings.Contains(out, "CNIS-") {
		t.Errorf("iptables -t nat -S:\n%s\nwant none of our chains (CNIS-*): the network is on nftables", out)
	}

	n.Must("podman", "rm", "-f", "-t", "0", name)
	n.requireClean(id, ip.String())
}
