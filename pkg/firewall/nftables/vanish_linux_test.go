package nftables

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// nftRun runs nft with args in the calling thread's namespace.
func nftRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("nft", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nft %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRemoveSurvivesReset: a reset of the firewall lands between Remove's
// read of the owner's chains and its commit (the seam: what Remove adds
// to its transaction is read at that point). Remove reads again, retries,
// and succeeds, leaving nothing of the owner: after a flush of the
// ruleset; after a flush and a repair that wrote the owner's rules again;
// after a flush on every read. Before, the transaction failed with "no
// such file or directory" and so did the DEL.
func TestRemoveSurvivesReset(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	o, r := fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	for _, tc := range []struct {
		name   string
		resets int // how many of Remove's reads a reset follows
		repair bool
	}{
		{"flush", 1, false},
		{"flush and repair", 1, true},
		{"flush on every read", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fwtest.InNS(t, func() {
				if err := New().Ensure(ctx, o, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				conn, err := netfilter.Dial()
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				reads := 0
				err = remove(conn, o, func(*netfilter.Batch) error {
					if reads++; reads > tc.resets {
						return nil
					}
					nftRun(t, "flush", "ruleset")
					if tc.repair {
						if err := New().Ensure(ctx, o, r); err != nil {
							t.Errorf("repair: %v", err)
						}
					}
					return nil
				})
				if err != nil {
					t.Errorf("Remove with a reset before its commit: %v", err)
				}
				if rs := nftRun(t, "list", "ruleset"); strings.Contains(rs, "10.88.0.2") {
					t.Errorf("Remove left rules of the owner:\n%s", rs)
				}
			})
		})
	}
}
