package k8s

import (
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"testing"

	"cnisuite/test/sandbox"
)

// TestKubernetesNode runs a node of one on our plugins, once with
// kube-proxy in iptables mode and once in nftables mode, each on a fresh
// node: Services, node ports, host ports and hairpin answer with real
// traffic, before and after kube-proxy restarts and a Service moves; the
// node stays Ready throughout; deleting the pods leaves nothing; and the
// machine's global kernel settings are what they were.
func TestKubernetesNode(t *testing.T) {
	sandbox.Require(t)
	c := findComponents(t)
	var missing []string
	for _, tool := range []string{"unshare", "nsenter", "ip", "curl", "runc", "nft", "iptables", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%v missing: run scripts/install-deps.sh and scripts/install-e2e-deps.sh (make deps does)", missing)
	}
	t.Logf("Kubernetes %s, etcd %s, containerd %s", c.k8s.Version, c.etcd.Version, c.containerd.Version)
	before := machineGlobals()
	t.Cleanup(func() { requireGlobalsKept(t, before) })
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) { runNode(t, c, mode) })
	}
}

// runNode is one run of the node with kube-proxy in the given mode.
func runNode(t *testing.T, comps components, mode string) {
	c := startCluster(t, comps)
	t.Cleanup(func() { failureLog(t, c.kubelet, c.kubeProxy) })
	c.requireMasksWritten()
	ready := c.watchReady()
	// kube-proxy first, as on a node its DaemonSet pod comes before the
	// workload's: our plugins choose their firewall backend beside it.
	c.startKubeProxy(mode)
	w := c.deploy()
	c.logFirewall()
	c.requireTraffic(w, 80, nodePort)
	// kube-proxy started before our first pod: our chains came last.
	c.requireSamePort("kube-proxy first, then our pods", map[string]string{"iptables": "NodePort", "nftables": "hostPort"}[mode])

	c.restartKubeProxy()
	c.requireTraffic(w, 80, nodePort)
	c.requireSamePort("kube-proxy restarted", "NodePort")

	c.moveService()
	c.requireTraffic(w, movedPort, movedNodePrt)
	c.requireClosed(fmt.Sprintf("%s:%d", nodeAddr, nodePort))
	c.requireClosed(w.webIP + ":80")

	ips := slices.Collect(maps.Values(w.podIPs))
	c.requireFootprint(ips)
	c.recreateSandbox("web-b")
	c.requireOneAddressEach("after web-b's sandbox was recreated")
	c.restartKubelet()
	c.requireOneAddressEach("after the kubelet restarted")
	c.requireTraffic(w, movedPort, movedNodePrt)
	ips = append(ips, slices.Collect(maps.Values(c.podAddresses()))...)
	c.requireWatcherBeside(w)
	c.requireSamePort("our host port's rules put back by the watcher", map[string]string{"iptables": "NodePort", "nftables": "hostPort"}[mode])
	c.deleteAll()
	c.requireClean(ips)
	c.requireAlwaysReady(ready)
}
