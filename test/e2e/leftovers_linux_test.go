package e2e

import (
	"strings"
	"time"

	"cnisuite/test/nodens"
	"cnisuite/test/sandbox"
)

// pluginStateDirs are where the plugins (and libcni's result cache) keep
// per-attachment state: host-local leases, tuning backups, cached results.
var pluginStateDirs = []string{"/var/lib/cni", "/run/cni"}

// leftovers lists what an attachment left on the node after its DEL: veth
// links, state files naming the container or its address, and firewall
// rules naming its address. Empty means clean.
func (n *node) leftovers(containerID, ip string) []string {
	var dirs []string
	for _, d := range pluginStateDirs {
		dirs = append(dirs, n.Path(d))
	}
	found := vethLeft(n.Run)
	found = append(found, stateFiles(dirs, containerID, ip)...)
	return append(found, rulesLeft(n.Run, containerID, ip)...)
}

// runner runs a command in some node's namespaces, like node.run.
type runner func(timeout time.Duration, name string, args ...string) (string, error)

// vethLeft lists the veth links of a node.
func vethLeft(run runner) []string {
	out, err := run(30*time.Second, "ip", "-o", "link", "show", "type", "veth")
	switch {
	case err != nil:
		return []string{err.Error()}
	case strings.TrimSpace(out) != "":
		return []string{"veth left: " + strings.TrimSpace(out)}
	}
	return nil
}

// stateFiles lists the files under the plugin state directories that name
// the container or its address (sandbox.StateFiles).
func stateFiles(dirs []string, containerID, ip string) []string {
	return sandbox.StateFiles(dirs, containerID, ip)
}

// rulesLeft lists the firewall rules of the node (nftables, which includes
// iptables-nft, and iptables-legacy) naming the address or the container
// (sandbox.RulesNaming).
func rulesLeft(run runner, containerID, ip string) []string {
	return sandbox.RulesNaming(func(script string) (string, error) {
		return run(30*time.Second, "sh", "-c", script)
	}, containerID, ip)
}

// requireClean waits for an attachment's DEL (runtimes often send it from
// a separate cleanup process) and fails the test with whatever is left.
func (n *node) requireClean(containerID, ip string) {
	n.T.Helper()
	ok := nodens.WaitFor(30*time.Second, func() bool {
		return len(n.leftovers(containerID, ip)) == 0
	})
	if !ok {
		n.T.Errorf("after DEL of %s (%s), the node still holds:\n  %s", containerID, ip,
			strings.Join(n.leftovers(containerID, ip), "\n  "))
	}
}

// requireAttached fails the test unless the node shows the attachment's
// veth, a state file naming the container (its lease) and a firewall rule
// naming its address: proof that requireClean looks where things are.
func (n *node) requireAttached(containerID, ip string) {
	n.T.Helper()
	found := n.leftovers(containerID, ip)
	if missing := missingFootprint(found); len(missing) > 0 {
		n.T.Errorf("while %s is attached, found no %v among:\n  %s", containerID, missing, strings.Join(found, "\n  "))
	}
}

// missingFootprint names the kinds of trace (veth, state file, rule) absent
// from a leftovers list.
func missingFootprint(found []string) []string {
	var missing []string
	for _, kind := range []string{"veth", "state file", "rule"} {
		seen := false
		for _, f := range found {
			seen = seen || strings.Contains(f, kind+" left")
		}
		if !seen {
			missing = append(missing, kind)
		}
	}
	return missing
}
