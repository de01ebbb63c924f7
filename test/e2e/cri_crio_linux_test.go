package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/crinode"
	"cnisuite/test/nodens"
)

// Paths on a CRI-O node.
const (
	crioSock    = "/run/crio/crio.sock"
	crioConfig  = "/run/e2e/crio.conf"
	crioConfDir = "/run/e2e/crio.conf.d" // empty: no drop-ins from the machine's /etc/crio
	crioRunc    = "/run/e2e/runc-oom"
)

// crio is CRI-O built by scripts/install-runtimes.sh, on conflists with
// cniVersion 1.1.0 and the verb recorders as its CNI bin dir. It runs its
// defaults where they matter to the plugins: no infra container (the pod's
// netns is only pinned), host ports in its own nft table.
type crio struct{ rt crinode.Build }

func (c *crio) name() string   { return "CRI-O " + c.rt.Version }
func (c *crio) binDir() string { return verbsDir }
func (c *crio) socket() string { return crioSock }

// hostPortsByPortmap is false: CRI-O keeps host ports in its own nftables
// table (DNAT in prerouting and output), and does not masquerade what
// 127.0.0.1 sends through them: the pod answers its own loopback. Only the
// node's addresses reach a host port.
func (c *crio) hostPortsByPortmap() bool { return false }

// critest skips, for CRI-O's reasons, not the plugins': the two metrics
// specs (CRI-O 1.34 lists only its cpu, memory and network descriptors,
// critest 1.37 wants cAdvisor's whole set), and the host-port spec, which
// fetches through 127.0.0.1 (see hostPortsByPortmap).
func (c *crio) critest() (string, string) {
	return "/crio", "metrics|port mapping with host port and container port"
}

func (c *crio) setUp(n *criNode) {
	c.rt = findRuntime(n.T, "crio", "crio", "pinns")
	needTools(n.T, "conmon", "podman")
	n.PrependPath(c.rt.Bin)
	n.install(map[string]string{
		"/etc/containers/policy.json":  "testdata/podman/policy.json",
		"/etc/containers/storage.conf": "testdata/podman/storage.conf",
	})
	n.WriteFile(crioConfDir+"/.keep", nil, 0o644)
	n.WriteFile(crioRunc, []byte(runcOOMWrapper), 0o644)
	if err := os.Chmod(n.Path(crioRunc), 0o755); err != nil {
		n.T.Fatal(err)
	}
	install2026Conflists(n)
}

// runcOOMWrapper runs runc with every oomScoreAdj of the bundle's
// config.json (or of an exec's process.json) raised to the caller's own:
// CRI-O asks for -998 for infra containers, which runc cannot set here
// (nsexec: failed to update /proc/self/oom_score_adj), and it has no
// restrict_oom_score_adj as containerd has.
const runcOOMWrapper = `#!/bin/sh
own=$(cat /proc/self/oom_score_adj)
raise() {
	[ -f "$1" ] || return 0
	v=$(grep -o '"oomScoreAdj": *-\{0,1\}[0-9]*' "$1" | head -n 1 | grep -o -- '-\{0,1\}[0-9]*$')
	if [ -n "$v" ] && [ "$v" -lt "$own" ]; then
		sed -i -E "s/(\"oomScoreAdj\": *)$v([^0-9]|\$)/\1$own\2/g" "$1"
	fi
}
prev=
for a in "$@"; do
	case "$prev" in --bundle|-b) raise "$a/config.json" ;; --process|-p) raise "$a" ;; esac
	case "$a" in --bundle=*) raise "${a#--bundle=}/config.json" ;; --process=*) raise "${a#--process=}" ;; esac
	prev=$a
done
exec /usr/bin/runc "$@"
`

func (c *crio) start(n *criNode, binDir, confDir string) *nodens.Daemon {
	n.T.Helper()
	tmpl, err := os.ReadFile("testdata/crio/crio.conf")
	if err != nil {
		n.T.Fatal(err)
	}
	cfg := strings.NewReplacer("@CNI_BIN_DIR@", binDir, "@CNI_CONF_DIR@", confDir,
		"@PINNS@", c.rt.Bin+"/pinns", "@RUNC@", crioRunc).Replace(string(tmpl))
	n.WriteFile(crioConfig, []byte(cfg), 0o644)
	return n.Start("crio", "--config", crioConfig, "--config-dir", crioConfDir, "--log-level", "info")
}

// importImages loads the test's images with podman into the store CRI-O
// reads (vfs under /var/lib/containers/storage).
func (c *crio) importImages(n *criNode) {
	n.T.Helper()
	archive := n.imageArchiveOnNode()
	n.Must("podman", "load", "-i", archive)
	out := n.Must("podman", "images", "--format", "{{.Repository}}:{{.Tag}}")
	for _, ref := range []string{pauseImage, busyboxImage, webImage} {
		if !strings.Contains(out, ref) {
			n.T.Fatalf("image %s not loaded; podman images:\n%s", ref, out)
		}
	}
}

// TestCRIO is the Kubernetes node path on CRI-O: the assertions of
// TestCRI, and what CRI-O does its own way — CHECK after every ADD, GC at
// start-up with the restored pods as the valid attachments, CHECK again
// for them, host ports in its own table (portmap gets no mappings) —
// then cri-tools' critest, and the table of what CRI-O sent.
func TestCRIO(t *testing.T) {
	cases := append(criCommonCases("crio_killed_and_restarted"),
		criCase{"check_after_add_gc_at_startup", crioCheckAndGC},
		criCase{"critest", runCritest})
	runCRICases(t, &crio{}, true, cases)
}

// crioCheckAndGC runs a pod with a host port: CRI-O sends every plugin
// CHECK right after ADD, and portmap gets no mappings (CRI-O keeps host
// ports in its own table), so it writes nothing. CRI-O is then SIGKILLed,
// a stale lease is planted for a pod it never knew, and CRI-O starts
// again: its GC, with the restored pod as the valid attachment, releases
// the stale lease and keeps the pod's lease and rules, and it sends the
// pod CHECK again. The pod still serves through its host port.
func crioCheckAndGC(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	cfg := podConfig(uniqueName("kept"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18085}}
	kept := n.mustRunPod(cfg, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	n.fetch(fmt.Sprintf("http://%s:18085/", nodeAddr))
	n.requireAttached(kept.id, kept.ips[0])
	for _, plugin := range []string{"bridge", "portmap"} {
		if got := verbsOf(n.sentCalls(), plugin, kept.id); !slices.Equal(got, []string{"ADD", "CHECK"}) {
			n.T.Errorf("%s got %v for pod %s, want ADD then CHECK", plugin, got, kept.name)
		}
	}
	n.requirePortmapIdle(kept.id)

	n.killCRI()
	const staleIP = "10.244.1.240"
	stale := "/var/lib/cni/networks/k8s-pod-network/" + staleIP
	n.WriteFile(stale, []byte(uniqueName("stale")+"\r\neth0"), 0o644)
	if _, err := os.Stat(n.Path(stale)); err != nil {
		n.T.Fatalf("planted lease not there: %v", err)
	}
	before := len(n.sentCalls())
	n.startCRI(n.binDir, n.confDir)
	if !nodens.WaitFor(60*time.Second, func() bool { _, err := os.Stat(n.Path(stale)); return os.IsNotExist(err) }) {
		n.T.Errorf("stale lease %s still there after CRI-O's start-up; it sent: %v", stale, n.sentCalls()[before:])
	}
	after := n.sentCalls()[before:]
	if !slices.ContainsFunc(after, func(c cniCall) bool { return c.plugin == "bridge" && c.verb == "GC" }) {
		n.T.Errorf("CRI-O sent bridge no GC at start-up; it sent: %v", after)
	}
	if got := verbsOf(after, "bridge", kept.id); !slices.Contains(got, "CHECK") {
		n.T.Errorf("CRI-O sent the restored pod %s %v after its start-up, want CHECK", kept.name, got)
	}
	n.requireAttached(kept.id, kept.ips[0])
	n.fetch(fmt.Sprintf("http://%s:18085/", nodeAddr))
	if err := n.stopAndRemove(kept); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(kept)
}

// requirePortmapIdle fails the test unless the per-call log shows
// portmap's ADD for the container, and that it wrote nothing: no
// mappings, no firewall step.
func (n *criNode) requirePortmapIdle(containerID string) {
	n.T.Helper()
	data, err := os.ReadFile(n.Path(callLog))
	if err != nil {
		n.T.Fatal(err)
	}
	seen := false
	for _, raw := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l logLine
		if json.Unmarshal([]byte(raw), &l) != nil || l.Plugin != "portmap" || l.Verb != "ADD" || l.ContainerID != containerID {
			continue
		}
		seen = true
		if len(l.Steps) > 0 || len(l.Debug) > 0 {
			n.T.Errorf("portmap wrote something for %s, whose host ports CRI-O handles: %s", containerID, raw)
		}
	}
	if !seen {
		n.T.Errorf("no portmap ADD for %s in the per-call log", containerID)
	}
}
