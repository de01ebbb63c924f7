package k8s

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cnisuite/test/nodens"
)

// fetchFromNode fetches the page of an address (host:port[/path]) from the
// node's own network namespace, as a program of the node does.
func (c *cluster) fetchFromNode(addr string) (string, error) {
	out, err := c.Run(10*time.Second, "curl", "-sS", "--max-time", "3", "http://"+addr)
	return strings.TrimSpace(out), err
}

// fetchFromPod fetches the page of an address (host:port, and a path if
// not /) count times from inside a pod (kubectl exec, busybox nc: the static busybox's wget crashes in a
// root filesystem without NSS) and returns the answers; a failed fetch
// answers "failed".
func (c *cluster) fetchFromPod(pod, addr string, count int) []string {
	c.T.Helper()
	hostPort, path, _ := strings.Cut(addr, "/")
	host, port, _ := strings.Cut(hostPort, ":")
	script := fmt.Sprintf(`for i in $(seq %d); do
	page=$(printf 'GET /%s HTTP/1.0\r\n\r\n' | nc -w 3 %s %s 2>/dev/null | tail -n 1)
	echo "${page:-failed}"
done`, count, path, host, port)
	out, err := c.Run(time.Duration(count)*5*time.Second+30*time.Second, "kubectl", "exec", pod, "--", "sh", "-c", script)
	if err != nil {
		c.T.Errorf("kubectl exec %s: %v", pod, err)
		return nil
	}
	return strings.Fields(out)
}

// maxAnswers bounds how many answers requireReached collects: enough to
// outlast the second or two an endpoint is out of kube-proxy's rules after
// a kubelet restart (its prober starts a restarted container's readiness
// at "not ready", measured: 16 ms, then kube-proxy's minSyncPeriod).
const maxAnswers = 90

// requireReached fetches, in rounds of ten, until the answers name every
// one of want (or maxAnswers came), and fails the test unless they name
// exactly want: a Service reaching all of its backends, and nothing else
// (a failed fetch answers "failed").
func (c *cluster) requireReached(what string, fetch func(count int) []string, want ...string) {
	c.T.Helper()
	seen := map[string]int{}
	for round := 0; round < maxAnswers/10 && len(seen) < len(want); round++ {
		for _, answer := range fetch(10) {
			seen[answer]++
		}
	}
	names := slices.Sorted(maps.Keys(seen))
	if !slices.Equal(names, slices.Sorted(slices.Values(want))) {
		pods, _ := c.Run(30*time.Second, "kubectl", "get", "pods", "-o", "wide")
		slices, _ := c.Run(30*time.Second, "kubectl", "get", "endpointslices", "-o", "wide")
		c.T.Errorf("%s: answers %v, want exactly %v; now:\n%s\n%s", what, seen, want, pods, slices)
	}
}

// fromNode fetches an address count times from the node, once it answers
// at all: kube-proxy applies a change within its minSyncPeriod, after the
// API server has it.
func (c *cluster) fromNode(addr string, count int) []string {
	c.T.Helper()
	if !nodens.WaitFor(30*time.Second, func() bool { _, err := c.fetchFromNode(addr); return err == nil }) {
		return []string{"failed"}
	}
	var got []string
	for range count {
		out, err := c.fetchFromNode(addr)
		if err != nil {
			out = "failed"
		}
		got = append(got, out)
	}
	return got
}

// requireTraffic checks, with real traffic, what users of the node rely
// on: the Service reaching both backends from the node and from a pod, the
// node port, the host port from the node's loopback, its address and
// another pod, and a pod reaching itself through a Service (hairpin).
func (c *cluster) requireTraffic(w *workload, port, node int) {
	c.T.Helper()
	fromNode := func(addr string) func(int) []string {
		return func(count int) []string { return c.fromNode(addr, count) }
	}
	fromClient := func(addr string) func(int) []string {
		return func(count int) []string { return c.fetchFromPod("client", addr, count) }
	}
	svc := fmt.Sprintf("%s:%d", w.webIP, port)
	c.requireReached("ClusterIP "+svc+" from the node", fromNode(svc), webPods...)
	c.requireReached("ClusterIP "+svc+" from pod client", fromClient(svc), webPods...)
	np := fmt.Sprintf("%s:%d", nodeAddr, node)
	c.requireReached("NodePort "+np+" from the node", fromNode(np), webPods...)
	c.requireReached("NodePort "+np+" from pod client", fromClient(np), webPods...)
	for _, host := range []string{"127.0.0.1", nodeAddr} {
		hp := fmt.Sprintf("%s:%d", host, hostPort)
		c.requireReached("hostPort "+hp+" from the node", fromNode(hp), "web-a")
	}
	hp := fmt.Sprintf("%s:%d", nodeAddr, hostPort)
	c.requireReached("hostPort "+hp+" from pod client", fromClient(hp), "web-a")
	self := w.selfIP + ":80"
	c.requireReached("hairpin: pod client through Service client "+self, fromClient(self), "client")
	c.requireReached("egress of pod client to "+outsideEcho, fromClient(outsideEcho), nodeAddr)
}

// requireClosed fails the test unless an address stops answering from the
// node within 30 s: a Service port or node port that was moved away.
func (c *cluster) requireClosed(addr string) {
	c.T.Helper()
	var out string
	if !nodens.WaitFor(30*time.Second, func() bool {
		var err error
		out, err = c.fetchFromNode(addr)
		return err != nil
	}) {
		c.T.Errorf("%s still answers %q after the Service moved", addr, out)
	}
}
