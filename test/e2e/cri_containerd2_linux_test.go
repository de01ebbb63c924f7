package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
)

// fullConfDir holds a conflist whose range has three addresses, for the
// STATUS subtest; its containerd runs on configuration version 4, the
// other subtests' on version 3.
const fullConfDir = "/etc/cni/full.d"

// containerd2 is containerd 2.x built by scripts/install-runtimes.sh, its
// CRI plugin driven over CRI, on conflists with cniVersion 1.1.0 (so that
// it sends STATUS) and the verb recorders as its CNI bin dir.
type containerd2 struct{ rt crinode.Build }

func (c *containerd2) name() string   { return "containerd " + c.rt.Version }
func (c *containerd2) binDir() string { return verbsDir }
func (c *containerd2) socket() string { return containerdSock }

func (c *containerd2) hostPortsByPortmap() bool { return true }

func (c *containerd2) critest() (string, string) { return "/k8s.io", "" }

func (c *containerd2) setUp(n *criNode) {
	c.rt = findRuntime(n.T, "containerd", "containerd", "containerd-shim-runc-v2", "ctr")
	n.PrependPath(c.rt.Bin)
	install2026Conflists(n)
	n.WriteFile(fullConfDir+"/10-kubernetes.conflist", kubeConflist(n.T, conflistOptions{
		version: "1.1.0", logFile: callLog, ranges: [][]string{{"10.244.1.0/24", "10.244.1.250", "10.244.1.252"}},
	}), 0o644)
}

func (c *containerd2) start(n *criNode, binDir, confDir string) *nodens.Daemon {
	config := crinode.Containerd2V3
	if confDir == fullConfDir {
		config = crinode.Containerd2V4
	}
	return startContainerd(n, config, binDir, confDir)
}

func (c *containerd2) importImages(n *criNode) { n.ctrImport() }

// install2026Conflists installs the conflists the runtimes of 2026 run
// on: examples/kubernetes.conflist and its dual-stack variant at
// cniVersion 1.1.0, every plugin logging its calls, and the recorders of
// what the runtime sends.
func install2026Conflists(n *criNode) {
	n.WriteFile(criConfDir+"/10-kubernetes.conflist", kubeConflist(n.T, conflistOptions{version: "1.1.0", logFile: callLog}), 0o644)
	n.WriteFile(dualConfDir+"/10-dual-stack.conflist", kubeConflist(n.T, conflistOptions{
		version: "1.1.0", logFile: callLog, ranges: [][]string{{"10.244.1.0/24"}, {"fd00:10:244:1::/64"}},
	}), 0o644)
	n.writeVerbRecorders()
}

// TestCRIContainerd2 is the Kubernetes node path on containerd 2.x: the
// assertions of TestCRI, and what is new in 2.x — STATUS on every CRI
// status poll, which turns NetworkReady false when our range is full —
// then cri-tools' critest, and the table of what containerd sent.
func TestCRIContainerd2(t *testing.T) {
	cases := append(criCommonCases("containerd_killed_and_restarted"),
		criCase{"k8s_cni_args_without_ignoreunknown", criArgs},
		criCase{"status_full_range_not_ready", containerdStatusPolling},
		criCase{"sends_1.1.0_and_loopback_0.3.1", containerdVersions},
		criCase{"watcher_repairs_nft_flush", criWatchFlush},
		criCase{"critest", runCritest})
	runCRICases(t, &containerd2{}, true, cases)
}

// runtimeVersion is what the runtime says it is, over CRI.
func (n *criNode) runtimeVersion() string {
	n.T.Helper()
	resp, err := call(n.cri.rt.Version, &cri.VersionRequest{})
	if err != nil {
		n.T.Fatalf("Version: %v", err)
	}
	return resp.RuntimeName + " " + resp.RuntimeVersion
}

// containerdStatusPolling fills a range of three addresses with three
// pods: containerd's next status poll sends STATUS, host-local answers
// that the range is full, and CRI reports NetworkReady false with our
// message; once a pod is removed, NetworkReady is true again.
func containerdStatusPolling(n *criNode) {
	n.useCRI(n.flavor.binDir(), fullConfDir)
	before := len(n.sentCalls())
	var pods []*criPod
	for i := range 3 {
		pods = append(pods, n.mustRunPod(podConfig(uniqueName(fmt.Sprintf("full%d", i)), n.cgroupParent)))
	}
	var reason string
	if !nodens.WaitFor(30*time.Second, func() bool { reason = n.networkNotReady(); return reason != "" }) {
		n.T.Fatalf("NetworkReady stays true with the range full (10.244.1.250-252 held by %s, %s, %s)", pods[0].ips[0], pods[1].ips[0], pods[2].ips[0])
	}
	n.T.Logf("range full: %s", reason)
	if !strings.Contains(reason, "no free address") {
		n.T.Errorf("NetworkReady is false, but not for our STATUS error (range set has no free address): %s", reason)
	}
	statuses := slices.ContainsFunc(n.sentCalls()[before:], func(c cniCall) bool { return c.verb == "STATUS" && c.plugin == "bridge" })
	if !statuses {
		n.T.Errorf("containerd sent bridge no STATUS while the range was full")
	}
	if err := n.stopAndRemove(pods[0]); err != nil {
		n.T.Fatal(err)
	}
	if !nodens.WaitFor(30*time.Second, func() bool { reason = n.networkNotReady(); return reason == "" }) {
		n.T.Errorf("NetworkReady still false with an address free again: %s", reason)
	}
	for _, p := range pods[1:] {
		if err := n.stopAndRemove(p); err != nil {
			n.T.Fatal(err)
		}
	}
	n.requirePodsGone(pods...)
}

// networkNotReady returns the reason and message of a false NetworkReady
// condition, or "" when the network is ready.
func (n *criNode) networkNotReady() string {
	n.T.Helper()
	resp, err := call(n.cri.rt.Status, &cri.StatusRequest{})
	if err != nil {
		n.T.Fatalf("Status: %v", err)
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Type == cri.NetworkReady && !c.Status {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// containerdVersions checks, on the calls containerd sent so far, what
// the issue found by hand: every call to the conflist's plugins at 1.1.0,
// loopback at 0.3.1 (go-cni's own configuration), STATUS among them, and
// DEL twice per pod (stop, then remove).
func containerdVersions(n *criNode) {
	calls := n.sentCalls()
	var statuses int
	for _, c := range calls {
		want := "1.1.0"
		if c.plugin == "loopback" {
			want = "0.3.1"
		}
		if c.version != want {
			n.T.Errorf("containerd sent %s %s with cniVersion %s, want %s", c.plugin, c.verb, c.version, want)
		}
		if c.verb == "STATUS" {
			statuses++
		}
	}
	if statuses == 0 {
		n.T.Errorf("containerd sent no STATUS on a 1.1.0 conflist")
	}
	pod := ""
	for _, c := range calls {
		if c.plugin == "bridge" && c.verb == "ADD" {
			pod = c.container
			break
		}
	}
	if got := verbsOf(calls, "bridge", pod); !slices.Equal(got, []string{"ADD", "DEL", "DEL"}) {
		n.T.Errorf("bridge got %v for pod %s, want ADD then DEL twice (stop and remove)", got, pod)
	}
}
