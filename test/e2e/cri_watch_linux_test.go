package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/nodens"
)

// repairLine is the watcher's line for a repair of the pod's network.
var repairLine = regexp.MustCompile(`(?m)^k8s-pod-network: \d+ attachments: \d+ intact, [1-9]\d* repaired`)

// criWatchFlush runs `cnisuite watch` on the node (its network and mount
// namespaces, as a systemd unit would run it) and a pod with a host port;
// `nft flush ruleset` takes every rule of the node; with nothing else done
// the host port answers again within a bounded wait, the watcher says it
// repaired the network, and containerd's next STATUS (NetworkReady) is
// true. Stop and remove then leave nothing.
func criWatchFlush(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	if _, err := os.Stat(n.Path("/opt/cni/bin/cnisuite")); err != nil {
		n.T.Fatalf("cnisuite is not beside the plugins (run `make build`): %v", err)
	}
	w := n.Start("/opt/cni/bin/cnisuite", "watch")
	n.T.Cleanup(func() {
		w.Stop()
		n.T.Logf("cnisuite watch printed:\n%s", w.Output())
	})
	if !nodens.WaitFor(30*time.Second, func() bool { return strings.Contains(w.Output(), "watching") || w.Exited() }) || w.Exited() {
		n.T.Fatalf("cnisuite watch did not start: %s", w.Output())
	}
	cfg := podConfig(uniqueName("flushed"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18087}}
	web := n.mustRunPod(cfg, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	url := fmt.Sprintf("http://%s:18087/", nodeAddr)
	n.fetch(url)
	if reason := n.networkNotReady(); reason != "" {
		n.T.Errorf("NetworkReady false before the flush: %s", reason)
	}
	n.Must("nft", "flush", "ruleset")
	start := time.Now()
	if !n.fetchWithin(url, 5*time.Second) {
		n.T.Fatalf("after nft flush ruleset with the watcher running, the host port does not answer")
	}
	n.T.Logf("the host port answers again %s after the flush (the wait included)", time.Since(start).Round(time.Millisecond))
	// The flush took the pod's rules: the watcher says it put them back.
	if !nodens.WaitFor(5*time.Second, func() bool { return repairLine.MatchString(w.Output()) }) {
		n.T.Errorf("the watcher reported no repair of k8s-pod-network:\n%s", w.Output())
	}
	var reason string
	if !nodens.WaitFor(10*time.Second, func() bool { reason = n.networkNotReady(); return reason == "" }) {
		n.T.Errorf("NetworkReady false after the watcher's repair: %s", reason)
	}
	if err := n.stopAndRemove(web); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(web)
}
