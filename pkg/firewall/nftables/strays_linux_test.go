package nftables

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// TestStrayElementsGiveWay: when an operator deletes an attachment's ledger
// chains and not their elements, the elements hold host ports and
// addresses for nobody; the next owner of those keys takes them over,
// while a key of a live owner is still refused.
func TestStrayElementsGiveWay(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	fwtest.InNS(t, func() {
		b := New()
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
		gone := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "gone", IfName: "eth0"}
		if err := b.Ensure(ctx, gone, r); err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{nftmodel.PrefixDNAT, nftmodel.PrefixHairpin} {
			name := nftmodel.ChainName(prefix, gone)
			if out, err := exec.Command("sh", "-c", "nft flush chain ip cnisuite_portmap "+name+" && nft delete chain ip cnisuite_portmap "+name).CombinedOutput(); err != nil {
				t.Fatalf("deleting %s: %v: %s", name, err, out)
			}
		}
		next := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "next", IfName: "eth0"}
		if err := b.Ensure(ctx, next, r); err != nil {
			t.Fatalf("Ensure over stray elements: %v", err)
		}
		if err := b.Check(ctx, next, r); err != nil {
			t.Errorf("CHECK of the owner that took the stray keys: %v", err)
		}
		live := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "live", IfName: "eth0"}
		if err := b.Ensure(ctx, live, r); !errors.Is(err, fwapi.ErrConflict) {
			t.Errorf("Ensure of keys a live owner holds = %v, want ErrConflict", err)
		}
		if err := b.Remove(ctx, next); err != nil {
			t.Fatal(err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}
