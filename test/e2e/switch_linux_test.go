package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"cnisuite/test/sandbox"
)

var switchBackends = []string{"iptables", "nftables"}

// TestUpgradeFromReference: pods attached by the reference plugins v1.9.1,
// then the binaries switched to ours: our DEL of one pod and our GC of the
// other leave nothing of either — no lease, no tuning backup, no rule.
func TestUpgradeFromReference(t *testing.T) {
	for i, backend := range switchBackends {
		t.Run(backend, func(t *testing.T) {
			w := newInterop(t, backend, 10+i)
			a := w.attach(w.withTheRefs, "ref-a", 18201, 80)
			b := w.attach(w.withTheRefs, "ref-b", 18211, 80)
			if got := w.fetch(18201); got != "ref-a" {
				t.Fatalf("through the reference's mapping: %q, want ref-a", got)
			}
			if len(w.leftovers(a)) == 0 {
				t.Fatalf("no lease or rule of %s found while attached: the check looks in the wrong places", a.rc.ContainerID)
			}
			w.detach(w.withOurs, a)
			if left := w.leftovers(a); len(left) > 0 {
				t.Errorf("our DEL of a pod the reference attached left:\n  %s", strings.Join(left, "\n  "))
			}
			w.inNode(func() error {
				return w.withOurs.GCNetworkList(context.Background(), w.list, &libcni.GCArgs{})
			})
			if left := w.leftovers(b); len(left) > 0 {
				t.Errorf("our GC keeping nothing left of the reference's pod:\n  %s", strings.Join(left, "\n  "))
			}
			w.detach(w.withOurs, b)
		})
	}
}

// TestRollbackToReference: a pod attached by ours, the binaries switched
// back to the reference, whose DEL of that pod does not know our rules. A
// new pod then gets the old pod's address and host port (mapped to another
// container port), and cnisuite-gc — the one command of docs/operations.md
// — removes what we left without touching the live pod: the host port
// reaches the new pod.
func TestRollbackToReference(t *testing.T) {
	gcTool := buildGCTool(t)
	for i, backend := range switchBackends {
		t.Run(backend, func(t *testing.T) {
			w := newInterop(t, backend, 20+i)
			old := w.attach(w.withOurs, "ours-old", 18202, 80)
			if got := w.fetch(18202); got != "ours-old" {
				t.Fatalf("through our mapping: %q, want ours-old", got)
			}
			w.detach(w.withTheRefs, old)
			t.Logf("after the reference's DEL, ours left:\n  %s", strings.Join(w.leftovers(old), "\n  "))

			reuse := [2]string{"IP", old.ip}
			next := w.attach(w.withTheRefs, "ref-next", 18202, 81, [2]string{"IgnoreUnknown", "1"}, reuse)
			if next.ip != old.ip {
				t.Fatalf("the new pod got %s, not the old pod's %s", next.ip, old.ip)
			}
			t.Logf("before cnisuite-gc, host port 18202 answers %q", w.fetch(18202))
			out, err := exec.Command("nsenter", "--net="+w.node.Path(), "--", gcTool,
				"-bindir", w.ours, "-confdir", w.confDir, "-cachedir", w.cacheDir).CombinedOutput()
			if err != nil {
				t.Fatalf("cnisuite-gc: %v\n%s", err, out)
			}
			t.Logf("cnisuite-gc:\n%s", out)
			if got := w.fetch(18202); got != "ref-next" {
				t.Errorf("after cnisuite-gc, host port 18202 answers %q, want the new pod ref-next", got)
			}
			// The old pod's address is the new pod's now: look for its ID,
			// and for any owner rule of ours (no pod of ours is left).
			left := ourOwnerRules(t, nsRunner(w.node.Path()))
			left = append(left, stateFiles([]string{"/var/lib/cni", "/run/cni", w.dataDir}, old.rc.ContainerID, "no-address")...)
			if len(left) > 0 {
				t.Errorf("cnisuite-gc left state of the old pod:\n  %s", strings.Join(left, "\n  "))
			}
			if len(w.leftovers(next)) == 0 {
				t.Errorf("cnisuite-gc removed the live pod's lease and rules")
			}
			w.detach(w.withTheRefs, next)
		})
	}
}

// ourOwnerRules lists the rules of ours that belong to an attachment: the
// iptables backend's CNIS- chains and jumps, the nftables backend's owner
// chains, their map elements and commented rules. Empty skeleton tables and
// the localnet guard belong to no attachment.
func ourOwnerRules(t *testing.T, run runner) []string {
	t.Helper()
	var found []string
	for _, script := range []string{"nft list ruleset", "if command -v iptables-legacy-save >/dev/null; then iptables-legacy-save; fi"} {
		out, err := run(30*time.Second, "sh", "-c", script)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			for _, mark := range []string{"CNIS-", `comment "cnisuite `, "jump mq-", "jump pm", "jump sc-"} {
				if strings.Contains(line, mark) {
					found = append(found, "rule of ours left: "+strings.TrimSpace(line))
					break
				}
			}
		}
	}
	return found
}

// buildGCTool builds cmd/cnisuite-gc into a temp dir.
func buildGCTool(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cnisuite-gc")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/cnisuite-gc")
	cmd.Dir = sandbox.ModuleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building cnisuite-gc: %v\n%s", err, b)
	}
	return out
}
