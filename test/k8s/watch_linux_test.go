package k8s

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cnisuite/test/nodens"
)

// churnServices is how many Services the churn creates and deletes, one
// at a time: each change is a sync of kube-proxy (iptables-restore into
// iptables-nft's nat table, or one nftables transaction), and each sync
// sends nftables events the watcher wakes up for.
const churnServices = 12

// syncCount matches kube-proxy's count of its syncs in its metrics.
var syncCount = regexp.MustCompile(`(?m)^kubeproxy_sync_proxy_rules_duration_seconds_count\{ip_family="IPv4"\} (\d+)`)

// requireWatcherBeside runs `cnisuite watch` on the node (as its systemd
// unit would: the node's namespaces, no arguments) through Service churn
// and a kube-proxy restart: it must repair nothing, so it never fights
// kube-proxy. Then, as the control that it watches at all, our host
// port's rules are taken away: it must put them back, leaving kube-proxy's
// rules as they were.
func (c *cluster) requireWatcherBeside(w *workload) {
	c.T.Helper()
	watcher := c.Start("/opt/cni/bin/cnisuite", "watch")
	if !nodens.WaitFor(30*time.Second, func() bool { return strings.Contains(watcher.Output(), "watching") || watcher.Exited() }) || watcher.Exited() {
		c.T.Fatalf("cnisuite watch did not start (%v):\n%s", watcher.Err(), watcher.Output())
	}
	started := len(watcher.Output())
	before := c.kubeProxySyncs()
	for i := range churnServices {
		name := "churn-" + strconv.Itoa(i)
		c.Must("kubectl", "create", "service", "clusterip", name, "--tcp=80:80")
		c.Must("kubectl", "delete", "service", name)
	}
	churned := c.kubeProxySyncs() - before
	if churned == 0 {
		c.T.Errorf("kube-proxy did not sync during the churn of %d Services: the watcher saw nothing of it", churnServices)
	}
	c.restartKubeProxy()
	c.requireTraffic(w, movedPort, movedNodePrt)
	c.T.Logf("kube-proxy synced %d times during the churn beside the watcher, then restarted", churned)
	if out := watcher.Output()[started:]; out != "" {
		c.T.Errorf("cnisuite watch acted beside kube-proxy (it prints only repairs and failures):\n%s", out)
	}
	kubeRules := c.kubeProxyRules()
	c.takeHostPortRules()
	hp := fmt.Sprintf("%s:%d", nodeAddr, hostPort)
	if !nodens.WaitFor(10*time.Second, func() bool { out, err := c.fetchFromNode(hp); return err == nil && out == "web-a" }) {
		c.T.Errorf("with our host port's rules taken, the watcher did not put them back within 10 s:\n%s", watcher.Output())
	}
	c.T.Logf("the watcher's repair:\n%s", watcher.Output())
	if after := c.kubeProxyRules(); !slices.Equal(after, kubeRules) {
		c.T.Errorf("kube-proxy's rules changed across the watcher's repair:\nbefore:\n%s\nafter:\n%s", strings.Join(kubeRules, "\n"), strings.Join(after, "\n"))
	}
	watcher.Stop()
}

// kubeProxySyncs reads how many times kube-proxy synced its rules.
func (c *cluster) kubeProxySyncs() int {
	c.T.Helper()
	m := syncCount.FindStringSubmatch(c.Must("curl", "-fsS", "http://127.0.0.1:10249/metrics"))
	if m == nil {
		c.T.Fatalf("kube-proxy's metrics have no sync count")
	}
	n, _ := strconv.Atoi(m[1]) // \d+
	return n
}

// kubeProxyRules lists kube-proxy's rules, sorted: its KUBE- chains in
// iptables mode (counters left out), its table in nftables mode.
func (c *cluster) kubeProxyRules() []string {
	c.T.Helper()
	var lines []string
	if c.mode == "iptables" {
		for _, line := range strings.Split(c.Must("iptables-save", "-t", "nat"), "\n") {
			if strings.Contains(line, "KUBE-") && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
	} else {
		lines = strings.Split(c.Must("nft", "list", "table", "ip", "kube-proxy"), "\n")
	}
	slices.Sort(lines)
	return lines
}

// takeHostPortRules deletes what sends a host port to its pod, as other
// software resetting the firewall does: in iptables mode our jumps from
// the nat table's PREROUTING and OUTPUT, in nftables mode our portmap
// table. Equivalent to: nft delete rule ip nat PREROUTING handle $h / nft
// delete table ip cnisuite_portmap.
func (c *cluster) takeHostPortRules() {
	c.T.Helper()
	if c.mode != "iptables" {
		c.Must("nft", "delete", "table", "ip", "cnisuite_portmap")
		return
	}
	// nft shows no iptables comment: our jumps are those to our DNAT chains.
	handle := regexp.MustCompile(`jump CNIS-DN-\S+ # handle (\d+)$`)
	deleted := 0
	for _, chain := range []string{"PREROUTING", "OUTPUT"} {
		for _, line := range strings.Split(c.Must("nft", "-a", "list", "chain", "ip", "nat", chain), "\n") {
			if m := handle.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				c.Must("nft", "delete", "rule", "ip", "nat", chain, "handle", m[1])
				deleted++
			}
		}
	}
	if deleted == 0 {
		c.T.Fatalf("no jump to our host port's chain in the nat table's PREROUTING or OUTPUT:\n%s", c.Must("nft", "-a", "list", "table", "ip", "nat"))
	}
}
