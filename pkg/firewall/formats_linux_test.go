package firewall

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cnisuite/test/golden"
)

// nsDirRE is the directory named after the network namespace (its cookie,
// or its inode on kernels without cookies): a number each namespace draws.
var nsDirRE = regexp.MustCompile(`fw-backend/[ci]\d+/`)

// netnsNormalized replaces the namespace's directory, after checking it is
// the calling thread's.
func netnsNormalized(t *testing.T, tree string) string {
	t.Helper()
	id, err := netnsID()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tree, "fw-backend/"+id+"/") {
		t.Fatalf("no directory of this network namespace (%s):\n%s", id, tree)
	}
	return nsDirRE.ReplaceAllString(tree, "fw-backend/<netns>/")
}

// TestFormatHostPortClaims pins the host-port claims (docs/formats.md,
// "Host-port claims"): a single port on every address, a range on one
// address, and the owners file that lists them.
func TestFormatHostPortClaims(t *testing.T) {
	c, _, root := claimsOn(t)
	o := pmOwnerOf("net1", "c0ffee01")
	r := portRules(pm("tcp", 8080, 0, ""), pm("udp", 5000, 600, "192.0.2.10"), pm("sctp", 9090, 0, "::"))
	if err := c.Ensure(context.Background(), o, r); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	golden.Check(t, "format_claims", netnsNormalized(t, golden.Tree(t, filepath.Dir(root))))
}

// TestFormatBackendRecord pins the record of a network's firewall backend
// (docs/formats.md, "Firewall backend records"): the choice and one empty
// file per attachment holding it.
func TestFormatBackendRecord(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cnisuite")
	recs := records{root: root}
	ctx := context.Background()
	for _, o := range []Owner{
		{Plugin: PluginBridge, Network: "net1", ContainerID: "c0ffee01", IfName: "eth0"},
		{Plugin: PluginPortmap, Network: "net1", ContainerID: "c0ffee01", IfName: "eth0"},
	} {
		kind, err := recs.hold(ctx, o, func() (string, error) { return KindNFTables, nil })
		if err != nil || kind != KindNFTables {
			t.Fatalf("hold(%s) = %q, %v", o, kind, err)
		}
	}
	golden.Check(t, "format_backend_record", netnsNormalized(t, golden.Tree(t, filepath.Dir(root))))
}
