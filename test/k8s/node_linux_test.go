package k8s

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
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

// newNode starts the node (package nodens): tmpfs over nodeDirs, the
// plugins on /opt/cni/bin (read-only), the cgroup hierarchies the
// sandbox's sysfs hides, every global setting of masks covered by a file
// of its own, and the node's address; path comes first in its commands'
// PATH. The pods' cgroups go under a root of the node's own.
func newNode(t *testing.T, plugins string, path []string, masks []mask) *nodens.Node {
	t.Helper()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + strings.Join(append(path, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"), ":"),
		"HOME=/root", "LANG=C.UTF-8", "KUBECONFIG=" + adminConf}
	script := holderScript(plugins, crinode.CgroupMounts(string(data)), masks)
	return nodens.New(t, script, env, fmt.Sprintf("/cnisuite-k8s-%d", os.Getpid()))
}

// holderScript is what the holder runs in its fresh namespaces before it
// sleeps.
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
	return b.String()
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
