package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
)

// TestUpgradeWithoutBackendKeys: on a network whose configuration names no
// backend, the reference plugins v1.9.1 attach two pods (they write
// iptables), then the binaries are switched to ours. Our next pod of that
// network goes to iptables beside them — the network does not mix backends
// — and its host port answers; our DEL of one reference pod and our GC of
// the other leave nothing of them; once our pod goes too, nothing is left,
// the record of the network's backend included.
func TestUpgradeWithoutBackendKeys(t *testing.T) {
	w := newInterop(t, "", 30)
	a := w.attach(w.withTheRefs, "ref-a", 18301, 80)
	b := w.attach(w.withTheRefs, "ref-b", 18311, 80)
	c := w.attach(w.withOurs, "ours-c", 18321, 80)
	if got := w.fetch(18321); got != "ours-c" {
		t.Errorf("through our mapping beside the reference's: %q, want ours-c", got)
	}
	run := nsRunner(w.node.Path())
	nat, err := run(30*time.Second, "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	ruleset, err := run(30*time.Second, "nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(nat, ":CNIS-MQ-") || !strings.Contains(nat, ":CNIS-DN-") || strings.Contains(ruleset, "jump mq-") || strings.Contains(ruleset, "jump pm-") {
		t.Errorf("our pod on a network the reference runs on iptables is not on iptables:\niptables-save -t nat:\n%s\nnft list ruleset:\n%s", nat, ruleset)
	}
	if got := records(t, "interop-nokeys"); got != "iptables" {
		t.Errorf("record of the network's backend: %q, want iptables", got)
	}
	w.detach(w.withOurs, a)
	if left := w.leftovers(a); len(left) > 0 {
		t.Errorf("our DEL of a pod the reference attached left:\n  %s", strings.Join(left, "\n  "))
	}
	keep := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: c.rc.ContainerID, IfName: "eth0"}}}
	w.inNode(func() error { return w.withOurs.GCNetworkList(context.Background(), w.list, keep) })
	if left := w.leftovers(b); len(left) > 0 {
		t.Errorf("our GC keeping only our pod left of the reference's:\n  %s", strings.Join(left, "\n  "))
	}
	if got := w.fetch(18321); got != "ours-c" {
		t.Errorf("our pod after GC: %q, want ours-c", got)
	}
	w.detach(w.withOurs, c)
	if left := w.leftovers(c); len(left) > 0 {
		t.Errorf("our DEL of our pod left:\n  %s", strings.Join(left, "\n  "))
	}
	if got := records(t, "interop-nokeys"); got != "" {
		t.Errorf("record of the network's backend after its last pod: %q, want none", got)
	}
}

// records returns the recorded backends of network, in any network
// namespace, comma-separated ("" for none).
func records(t *testing.T, network string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("/run/cnisuite/fw-backend", "*", network, "backend"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, strings.TrimSpace(string(b)))
	}
	return strings.Join(kinds, ",")
}
