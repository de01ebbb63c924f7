package k8s

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// mask is a global kernel setting (not one of a network namespace) that a
// component of the node writes: inside the node a file of its own is
// bind-mounted over it, so the write lands there and not on the machine.
type mask struct {
	path string // under /proc/sys
	want string // what the component writes
}

// kubeletGlobals are the settings the kubelet writes at start when they
// differ (pkg/kubelet/cm's setupKernelTunables, protectKernelDefaults
// off): all of them global.
var kubeletGlobals = []mask{
	{"/proc/sys/vm/overcommit_memory", "1"},
	{"/proc/sys/vm/panic_on_oom", "0"},
	{"/proc/sys/kernel/panic", "10"},
	{"/proc/sys/kernel/panic_on_oops", "1"},
	{"/proc/sys/kernel/keys/root_maxkeys", "1000000"},
	{"/proc/sys/kernel/keys/root_maxbytes", "25000000"},
}

// maskSeed is what every mask file starts with: a value the kubelet never
// writes, so its write shows.
const maskSeed = "7"

// conntrackGlobals are the global conntrack sizes kube-proxy writes unless
// its configuration says 0 (maxPerCore and min, as kubeProxyConfig does);
// the timeouts it would also write belong to the node's network namespace,
// and are switched off by the same configuration.
var conntrackGlobals = []string{"/proc/sys/net/netfilter/nf_conntrack_max", "/sys/module/nf_conntrack/parameters/hashsize"}

// maskScript renders the mounts of the masks, for the node's holder.
// Equivalent to: echo 7 > /run/masks/$name; mount --bind /run/masks/$name $path.
func maskScript(masks []mask) string {
	var b strings.Builder
	for _, m := range masks {
		file := "/run/masks/" + strings.ReplaceAll(strings.TrimPrefix(m.path, "/proc/sys/"), "/", ".")
		fmt.Fprintf(&b, "echo %s > %s\nmount --bind %s %s\n", maskSeed, file, file, m.path)
	}
	return b.String()
}

// machineGlobals reads the machine's global settings the node's
// components write: what the test sees of them is the machine's (the
// sandbox has a network namespace of its own, not a kernel).
func machineGlobals() map[string]string {
	values := map[string]string{}
	paths := conntrackGlobals
	for _, m := range kubeletGlobals {
		paths = append(paths, m.path)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		switch {
		case os.IsNotExist(err):
			values[p] = "(absent)"
		case err != nil:
			values[p] = "(unreadable: " + err.Error() + ")"
		default:
			values[p] = strings.TrimSpace(string(data))
		}
	}
	return values
}

// requireGlobalsKept fails the test when a global setting differs from
// what it was before the cluster ran.
func requireGlobalsKept(t *testing.T, before map[string]string) {
	t.Helper()
	after := machineGlobals()
	for p, was := range before {
		if after[p] != was {
			t.Errorf("the machine's %s is %s after the run, was %s: a component of the node wrote it", p, after[p], was)
		}
	}
}

// requireMasksWritten fails the test unless every mask holds what the
// kubelet writes: proof that it wrote them, into the masks.
func (c *cluster) requireMasksWritten() {
	c.T.Helper()
	for _, m := range kubeletGlobals {
		got := strings.TrimSpace(c.Must("cat", m.path))
		if got != m.want {
			c.T.Errorf("inside the node %s is %s (the mask started at %s), want the kubelet's %s: did the kubelet write it, and into the mask?", m.path, got, maskSeed, m.want)
		}
	}
}
