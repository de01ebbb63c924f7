package k8s

import (
	"fmt"
	"strings"
)

// samePortWinner says who answers on a port that is both a node port
// (Service same, to pod client) and a host port (web-b's), from the node
// and from pod client: "NodePort", "hostPort", or the answers when they
// are mixed or failed.
func (c *cluster) samePortWinner() (fromNode, fromPod string) {
	c.T.Helper()
	addr := fmt.Sprintf("%s:%d", nodeAddr, samePort)
	name := func(answers []string) string {
		seen := map[string]bool{}
		for _, a := range answers {
			seen[a] = true
		}
		switch {
		case len(seen) == 1 && seen["client"]:
			return "NodePort"
		case len(seen) == 1 && seen["web-b"]:
			return "hostPort"
		}
		return strings.Join(answers, ",")
	}
	return name(c.fromNode(addr, 5)), name(c.fetchFromPod("client", addr, 5))
}

// requireSamePort fails the test unless want ("NodePort" or "hostPort")
// answers, from the node and from a pod, on the port that is both Service
// same's node port and web-b's host port. What docs/operations.md says of
// it, measured here: in iptables mode kube-proxy's jump to KUBE-SERVICES
// comes first in the nat table's built-in chains, and the node port wins;
// in nftables mode kube-proxy's base chains and ours have the same hooks
// and priorities (dstnat, -100 on output), the kernel runs the one
// registered last first, and kube-proxy registers its chains again each
// time it starts while we register ours when our table is created (the
// network's first attachment, or a repair that recreates it).
func (c *cluster) requireSamePort(when, want string) {
	c.T.Helper()
	fromNode, fromPod := c.samePortWinner()
	if fromNode != want || fromPod != want {
		c.T.Errorf("%s, kube-proxy in %s mode: port %d, a node port and a host port, is answered from the node by %s and from a pod by %s, want %s (docs/operations.md)",
			when, c.mode, samePort, fromNode, fromPod, want)
	} else {
		c.T.Logf("%s: port %d, a node port and a host port, is answered by the %s", when, samePort, want)
	}
}
