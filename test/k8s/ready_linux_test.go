package k8s

import (
	"strings"
	"time"

	"cnisuite/test/nodens"
)

// readyWatch is kubectl watching the node: one line per change of the
// Node object (the kubelet posts its status every 4 s when something
// changed), with the Ready condition's status, reason and message.
type readyWatch struct{ d *nodens.Daemon }

// watchReady starts the watch and waits for its first line.
func (c *cluster) watchReady() *readyWatch {
	c.T.Helper()
	cond := `{.status.conditions[?(@.type=="Ready")]`
	d := c.Start("kubectl", "get", "node", nodeName, "--watch", "-o",
		"jsonpath={.metadata.resourceVersion} "+cond+".status} "+cond+".reason} "+cond+`.message}{"\n"}`)
	if !nodens.WaitFor(time.Minute, func() bool { return strings.Contains(d.Output(), "\n") || d.Exited() }) || d.Exited() {
		c.T.Fatalf("kubectl get node --watch printed nothing (exited: %v):\n%s", d.Err(), d.Output())
	}
	return &readyWatch{d}
}

// requireAlwaysReady fails the test when the node's Ready condition was
// ever anything but True since the watch began, or when the watch ended
// before the test did (then it saw only part of the run).
//
// Issue 42 (item 7): portmap's STATUS could answer 51 for a pod being
// deleted (it read a record, then found the rules a DEL had just removed),
// and containerd then reports the network, so the node, not ready. This
// check is where that shows in a cluster; it is not relaxed for it.
func (c *cluster) requireAlwaysReady(w *readyWatch) {
	c.T.Helper()
	if w.d.Exited() {
		c.T.Errorf("the watch of the node's Ready condition ended before the test did (%v): the node was not sampled through the whole run", w.d.Err())
	}
	lines := strings.Split(strings.TrimSpace(w.d.Output()), "\n")
	var notReady []string
	for _, line := range lines {
		if f := strings.Fields(line); len(f) < 2 || f[1] != "True" {
			notReady = append(notReady, line)
		}
	}
	if len(notReady) > 0 {
		c.T.Errorf("the node left Ready during the run (issue 42, item 7, if the message names STATUS and a pod being deleted); of %d updates, these were not Ready:\n  %s",
			len(lines), strings.Join(notReady, "\n  "))
	} else {
		c.T.Logf("the node stayed Ready through %d updates of its status", len(lines))
	}
}
