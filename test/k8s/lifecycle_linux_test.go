package k8s

import (
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"cnisuite/test/nodens"
)

// leaseDir is host-local's directory of examples/kubernetes.conflist's
// network: one file per leased address.
const leaseDir = "/var/lib/cni/networks/k8s-pod-network"

// podAddresses reads every pod's address from the API server.
func (c *cluster) podAddresses() map[string]string {
	c.T.Helper()
	out := c.Must("kubectl", "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.podIP}{"\n"}{end}`)
	ips := map[string]string{}
	for _, line := range strings.Fields(out) {
		name, ip, _ := strings.Cut(line, "=")
		ips[name] = ip
	}
	return ips
}

// requireOneAddressEach fails the test unless every pod holds one address
// of its own and the node holds nothing more: as many veths as pods, and
// host-local's leases exactly the pods' addresses.
func (c *cluster) requireOneAddressEach(when string) {
	c.T.Helper()
	pods := c.podAddresses()
	var ips []string
	for name, ip := range pods {
		if net.ParseIP(ip) == nil {
			c.T.Errorf("%s: pod %s has no address (%q)", when, name, ip)
		}
		ips = append(ips, ip)
	}
	slices.Sort(ips)
	if len(slices.Compact(slices.Clone(ips))) != len(ips) {
		c.T.Errorf("%s: pods share an address: %v", when, pods)
	}
	var leases []string
	entries, err := os.ReadDir(c.Path(leaseDir))
	if err != nil {
		c.T.Fatal(err)
	}
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			leases = append(leases, e.Name())
		}
	}
	slices.Sort(leases)
	if !slices.Equal(leases, ips) {
		c.T.Errorf("%s: host-local leases %v, the pods hold %v", when, leases, pods)
	}
	if veths := c.podVeths(); len(veths) != len(pods) {
		c.T.Errorf("%s: %d veths for %d pods:\n%s", when, len(veths), len(pods), strings.Join(veths, "\n"))
	}
}

// restartKubelet stops the kubelet (SIGTERM) with pods running and starts
// it again; the pods keep running, and it waits until the node is Ready.
func (c *cluster) restartKubelet() {
	c.T.Helper()
	c.kubelet.Stop()
	c.kubelet = c.startKubelet()
	c.await(c.kubelet, "the node Ready after the kubelet's restart", "kubectl", "wait", "--for=condition=Ready", "node/"+nodeName, "--timeout=5s")
	c.await(c.kubelet, "the pods Ready after the kubelet's restart", "kubectl", "wait", "--for=condition=Ready", "pods", "--all", "--timeout=5s")
	// The pods' status says Ready from before; exec works once the new
	// kubelet knows the pods again.
	c.await(c.kubelet, "kubectl exec after the kubelet's restart", "kubectl", "exec", "client", "--", "true")
}

// recreateSandbox kills a pod's sandbox (its pause process, as a crash or
// the OOM killer would); the kubelet then removes it (DEL) and makes a new
// one (ADD). It waits until the pod is Ready in its new sandbox.
func (c *cluster) recreateSandbox(pod string) {
	c.T.Helper()
	ctr := []string{"--address", containerdSock, "-n", "k8s.io"}
	filter := `labels."io.kubernetes.pod.name"==` + pod + `,labels."io.cri-containerd.kind"==sandbox`
	ids := strings.Fields(c.Stdout("ctr", append(ctr, "containers", "ls", "-q", filter)...))
	if len(ids) != 1 {
		c.T.Fatalf("pod %s has sandboxes %v, want one", pod, ids)
	}
	restarts := c.jsonpath("pod/"+pod, "{.status.containerStatuses[0].restartCount}")
	c.Stdout("ctr", append(ctr, "tasks", "kill", "-s", "SIGKILL", ids[0])...)
	if !nodens.WaitFor(2*time.Minute, func() bool {
		out, err := c.Run(10*time.Second, "kubectl", "get", "pod/"+pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		return err == nil && strings.TrimSpace(out) != restarts
	}) {
		c.T.Fatalf("pod %s not restarted 2 minutes after its sandbox was killed:\n%s", pod, c.kubelet.Tail(30))
	}
	c.await(c.kubelet, "pod "+pod+" Ready in its new sandbox", "kubectl", "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=5s")
	now := strings.Fields(c.Stdout("ctr", append(ctr, "containers", "ls", "-q", filter)...))
	c.T.Logf("pod %s: sandbox %s killed, now %v", pod, ids[0], now)
}
