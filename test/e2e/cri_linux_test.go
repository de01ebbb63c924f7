package e2e

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/nodens"
)

// TestCRI is the Kubernetes node path: containerd 1.6's CRI plugin, driven
// over its gRPC API as the kubelet drives it, runs pods on our plugins with
// examples/kubernetes.conflist (bridge + host-local + portmap, keys left
// out as users leave them), and loopback for every pod's lo.
func TestCRI(t *testing.T) {
	cases := append(criCommonCases("containerd_killed_and_restarted"),
		criCase{"k8s_cni_args_without_ignoreunknown", criArgs})
	runCRICases(t, containerd16{}, false, cases) // the example as it is: no logFile
}

// criCase is a subtest of a CRI test, run on the node's view for it.
type criCase struct {
	name string
	run  func(*criNode)
}

// criCommonCases are the subtests every CRI runtime passes: host ports,
// DNS, leftovers, 20 pods at once, the runtime killed and restarted (named
// after it), dual stack.
func criCommonCases(restartName string) []criCase {
	return []criCase{
		{"hostport_web_pod", criWebPod},
		{"hostname_and_dns", criHostnameDNS},
		{"stop_and_remove_leave_nothing", criLeftovers},
		{"twenty_pods_at_once", criConcurrentPods},
		{restartName, criDaemonKilled},
		{"dual_stack", criDualStack},
	}
}

// runCRICases starts a node running rt, logs the runtime's own version,
// runs the cases in order and reports the CNI calls rt sent (and checks
// them against the plugins' per-call log when the conflists name one).
func runCRICases(t *testing.T, rt criFlavor, pluginLog bool, cases []criCase) {
	n := newCRINode(t, rt)
	t.Logf("runtime: %s (%s)", n.flavor.name(), n.runtimeVersion())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(n.on(t)) })
	}
	n.reportCalls(pluginLog)
}

// criWebPod runs a web server in a pod with hostPort 18080 and fetches its
// page through 127.0.0.1 and the node's address from the node, through the
// node's address from another pod, and from the pod address CRI reports;
// the pod's lo is up with 127.0.0.1. StopPodSandbox and RemovePodSandbox
// then leave nothing.
func criWebPod(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	recordsBefore := n.jumpRecords()
	cfg := podConfig(uniqueName("web"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18080}}
	web := n.mustRunPod(cfg, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	ip := web.ips[0]
	requireIn(n.T, net.ParseIP(ip), "10.244.1.0/24")
	if out := n.mustExec(web.ctr, "ip", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, " "+ip+"/") {
		n.T.Errorf("PodSandboxStatus reports %s, eth0 in the pod has:\n%s", ip, out)
	}
	if out := n.mustExec(web.ctr, "ip", "-o", "addr", "show", "dev", "lo"); !strings.Contains(out, "inet 127.0.0.1/8") {
		n.T.Errorf("lo in the pod has no 127.0.0.1 (loopback plugin):\n%s", out)
	}
	if out := n.mustExec(web.ctr, "ip", "-o", "link", "show", "dev", "lo"); !strings.Contains(out, ",UP") {
		n.T.Errorf("lo in the pod is not up (loopback plugin):\n%s", out)
	}

	if n.flavor.hostPortsByPortmap() {
		n.fetch("http://127.0.0.1:18080/")
	} else {
		n.T.Logf("%s maps host ports itself, not for 127.0.0.1: not fetched there", n.flavor.name())
	}
	n.fetch(fmt.Sprintf("http://%s:18080/", nodeAddr))
	n.fetch(fmt.Sprintf("http://%s:80/", ip))
	client := n.mustRunPod(podConfig(uniqueName("client"), n.cgroupParent), "/bin/sleep", "3600")
	n.podFetch(client, nodeAddr, 18080)
	n.requireAttached(web.id, ip)
	// Without backend keys, the network's backend is recorded while its
	// pods run: nftables on a node whose nat table is empty, iptables
	// where the runtime's own host-port rules (CRI-O) were there first.
	records := n.backendRecords()
	switch {
	case len(records) != 1 || !strings.HasPrefix(records[0], "k8s-pod-network="):
		n.T.Errorf("records of the networks' firewall backends under %s: %q, want one for k8s-pod-network", backendRecordsDir, records)
	case records[0] == "k8s-pod-network=iptables" && n.iptablesNFT() && len(n.jumpRecords()) <= len(recordsBefore):
		n.T.Errorf("no record of the pods' iptables-nft jumps under %s: their DEL would dump the built-in chains", jumpRecordsDir)
	case records[0] == "k8s-pod-network=nftables" && !slices.Equal(n.jumpRecords(), recordsBefore):
		n.T.Errorf("records of iptables-nft jumps for pods on nftables: %q, before them: %q", n.jumpRecords(), recordsBefore)
	}
	n.T.Logf("the network's firewall backend: %q", records)

	for _, p := range []*criPod{web, client} {
		if err := n.stopAndRemove(p); err != nil {
			n.T.Fatal(err)
		}
	}
	n.requirePodsGone(web, client)
	if after := n.jumpRecords(); !slices.Equal(after, recordsBefore) {
		n.T.Errorf("records of iptables-nft jumps after the pods are gone: %q, before them: %q", after, recordsBefore)
	}
	if got := n.backendRecords(); len(got) > 0 {
		n.T.Errorf("records of firewall backends after the pods are gone: %q", got)
	}
}

// backendRecordsDir is where a configuration without backend keys keeps
// each network's firewall backend while the network has pods.
const backendRecordsDir = "/run/cnisuite/fw-backend"

// backendRecords lists the node's records of networks' firewall backends
// as "<network>=<backend>", sorted.
func (n *criNode) backendRecords() []string {
	var found []string
	root := n.Path(backendRecordsDir)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "backend" {
			b, _ := os.ReadFile(p)
			found = append(found, filepath.Base(filepath.Dir(p))+"="+strings.TrimSpace(string(b)))
		}
		return nil
	})
	slices.Sort(found)
	return found
}

// jumpRecordsDir is where the iptables backend records the handles of the
// jumps it wrote with iptables-nft, so that DEL finds them without a dump.
const jumpRecordsDir = "/run/cnisuite/iptables-jumps"

// jumpRecords lists the node's records of iptables-nft jumps, sorted.
func (n *criNode) jumpRecords() []string {
	var found []string
	root := n.Path(jumpRecordsDir)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, strings.TrimPrefix(p, root))
		}
		return nil
	})
	slices.Sort(found)
	return found
}

// iptablesNFT reports whether the node's iptables is the nf_tables variant.
func (n *criNode) iptablesNFT() bool {
	out, err := n.Run(30*time.Second, "iptables", "-V")
	return err == nil && strings.Contains(out, "nf_tables")
}

// criHostnameDNS checks that the hostname and the DNS servers, searches
// and options of the pod configuration are what the container sees.
func criHostnameDNS(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	cfg := podConfig(uniqueName("dns"), n.cgroupParent)
	cfg.Hostname = "named-by-cri"
	cfg.DnsConfig = &cri.DNSConfig{
		Servers:  []string{"192.0.2.53", "fd00::53"},
		Searches: []string{"e2e.svc.cluster.local", "svc.cluster.local"},
		Options:  []string{"ndots:5", "timeout:1"},
	}
	p := n.mustRunPod(cfg, "/bin/sleep", "3600")
	if got := strings.TrimSpace(n.mustExec(p.ctr, "hostname")); got != cfg.Hostname {
		n.T.Errorf("hostname in the pod = %q, want %q", got, cfg.Hostname)
	}
	resolv := n.mustExec(p.ctr, "cat", "/etc/resolv.conf")
	for _, want := range []string{
		"nameserver 192.0.2.53\n", "nameserver fd00::53\n",
		"search e2e.svc.cluster.local svc.cluster.local\n", "options ndots:5 timeout:1\n",
	} {
		if !strings.Contains(resolv, want) {
			n.T.Errorf("/etc/resolv.conf in the pod lacks %q:\n%s", want, resolv)
		}
	}
	if err := n.stopAndRemove(p); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(p)
}

// mustExec runs a command in a container and fails the test if it fails.
func (n *criNode) mustExec(containerID string, cmd ...string) string {
	n.T.Helper()
	out, err := n.cri.exec(containerID, cmd...)
	if err != nil {
		n.T.Fatal(err)
	}
	return out
}

// podFetch gets / from host:port inside a pod (busybox nc: its wget
// crashes here) until the page comes back.
func (n *criNode) podFetch(p *criPod, host string, port int) {
	n.T.Helper()
	script := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %d`, host, port)
	var last string
	ok := nodens.WaitFor(20*time.Second, func() bool {
		out, err := n.cri.exec(p.ctr, "sh", "-c", script)
		last = out
		if err != nil {
			last = err.Error()
		}
		_, body, found := strings.Cut(out, "\r\n\r\n")
		return err == nil && found && body == page
	})
	if !ok {
		n.T.Errorf("GET http://%s:%d/ from pod %s = %q, want the page %q", host, port, p.name, last, page)
		return
	}
	n.T.Logf("GET http://%s:%d/ from pod %s: ok", host, port, p.name)
}
