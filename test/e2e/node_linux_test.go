package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/nodens"
	"cnisuite/test/sandbox"
)

// stateDirs get a fresh tmpfs in every node: whatever a runtime or a plugin
// writes there dies with the node.
var stateDirs = []string{"/run", "/var/lib/cni", "/etc/cni", "/opt/cni",
	"/var/lib/containers", "/var/lib/containerd", "/etc/containers"}

// plugins are the binaries every node needs in /opt/cni/bin.
var plugins = []string{"bridge", "host-local", "tuning", "portmap", "loopback"}

// node is a private network and mount namespace standing in for a machine
// (package nodens).
type node struct{ *nodens.Node }

// newNode starts a node with tmpfs over the state directories, the plugins
// of sandbox.Bin on /opt/cni/bin (read-only) and the cgroup hierarchies the
// sandbox's fresh sysfs hides. It is torn down, with every process left in
// it and the cgroups of node.cgroup, when the test ends.
func newNode(t *testing.T) *node {
	t.Helper()
	sandbox.Require(t)
	bin := pluginDir(t)
	script, err := holderScript(bin)
	if err != nil {
		t.Fatalf("node setup: %v", err)
	}
	return &node{nodens.New(t, script, nodeEnv(), "")}
}

// pluginDir returns the absolute directory of the plugin binaries and fails
// the test, naming them, when some are missing.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := sandbox.Bin(t)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(sandbox.ModuleRoot(t), dir)
	}
	var missing []string
	for _, p := range plugins {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("plugins %v missing from %s (run `make build`)", missing, dir)
	}
	return dir
}

// holderScript is the shell script the holder runs inside the fresh
// namespaces before it sleeps.
func holderScript(bin string) (string, error) {
	cg, err := cgroupScript()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range stateDirs {
		fmt.Fprintf(&b, "mkdir -p %s\nmount -t tmpfs -o mode=0755 tmpfs %s\n", d, d)
	}
	b.WriteString("mkdir -p /run/netns /run/lock /opt/cni/bin /etc/cni/net.d\n")
	fmt.Fprintf(&b, "mount --bind %s /opt/cni/bin\nmount -o remount,bind,ro /opt/cni/bin\n", shellQuote(bin))
	b.WriteString(cg)
	b.WriteString("ip link set lo up\n")
	return b.String(), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func nodeEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8",
	}
}
