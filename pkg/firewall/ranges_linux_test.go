package firewall

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
)

// TestRangeLifecycle: a port range is written, checked, read back by
// Mapped and removed with nothing left, in each backend; another owner's
// single port inside the range, a range over it and a range overlapping it
// are refused with ErrConflict (by the node's claims, in both backends;
// with nftables also by the bare backend a rootless runtime uses, which
// reads its maps), the port one past its end and the same ports of another
// protocol are not, and the refused port is free once the range's owner is
// removed.
func TestRangeLifecycle(t *testing.T) {
	ctx := context.Background()
	ranged := fwtest.PortRules(t, func(p *PortMaps) {
		p.Mappings = []PortMapping{
			{HostPort: 8000, ContainerPort: 8000, Protocol: "tcp", Range: 101},
			{HostPort: 5000, ContainerPort: 5000, Protocol: "udp", Range: 10, HostIP: net.ParseIP("192.0.2.10")},
		}
	})
	other := func(id string, ms ...PortMapping) (Owner, Rules) {
		o := fwtest.PortOwner
		o.ContainerID = id
		return o, fwtest.PortRules(t, func(p *PortMaps) { p.Mappings, p.ContainerV4 = ms, fwtest.CIDR(t, "10.88.0.3/16") })
	}
	inEachBackend(t, func(t *testing.T, kind string, b Backend) {
		if err := b.Ensure(ctx, fwtest.PortOwner, ranged); err != nil {
			t.Fatalf("Ensure(ranges): %v", err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, ranged); err != nil {
			t.Errorf("Check(ranges): %v", err)
		}
		got, err := b.(MappingReader).Mapped(ctx, fwtest.PortOwner)
		if err != nil || len(got) != 3 || got[0].HostPort != 8000 || got[0].Range != 101 {
			t.Errorf("Mapped = %v, %v; want 8000 (range 101) for both families and 5000 (range 10)", got, err)
		}
		checkers := map[string]Backend{"claims": b}
		if kind == KindNFTables {
			checkers["bare"] = nftables.New()
		}
		for how, cb := range checkers {
			rangeConflicts(t, how, cb, other)
		}
		if err := b.Remove(ctx, fwtest.PortOwner); err != nil {
			t.Fatalf("Remove(ranges): %v", err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, ranged); !errors.Is(err, ErrMissing) {
			t.Errorf("Check after Remove = %v, want ErrMissing", err)
		}
		o, r := other("ctr-after", PortMapping{HostPort: 8050, ContainerPort: 80, Protocol: "tcp"})
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Errorf("Ensure(port inside the removed range): %v", err)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatal(err)
		}
		if kind == KindNFTables {
			removeFlushedRange(t, b, ranged)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// rangeConflicts: owners whose ports overlap the range are refused, the
// others pass and are removed.
func rangeConflicts(t *testing.T, how string, b Backend, other func(string, ...PortMapping) (Owner, Rules)) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		m        PortMapping
		conflict bool
	}{
		{"port inside", PortMapping{HostPort: 8050, ContainerPort: 80, Protocol: "tcp"}, true},
		{"range over the end", PortMapping{HostPort: 8100, ContainerPort: 8100, Protocol: "tcp", Range: 5}, true},
		{"range around", PortMapping{HostPort: 7000, ContainerPort: 7000, Protocol: "tcp", Range: 2000}, true},
		{"port past the end", PortMapping{HostPort: 8101, ContainerPort: 80, Protocol: "tcp"}, false},
		{"another protocol", PortMapping{HostPort: 8000, ContainerPort: 8000, Protocol: "sctp", Range: 101}, false},
	} {
		o, r := other("ctr-"+tc.name, tc.m)
		err := b.Ensure(ctx, o, r)
		if errors.Is(err, ErrConflict) != tc.conflict || (!tc.conflict && err != nil) {
			t.Errorf("%s: Ensure(%s) = %v, want conflict %v", how, tc.name, err, tc.conflict)
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Errorf("%s: Remove(%s): %v", how, tc.name, err)
		}
	}
}

// removeFlushedRange: when the owner's chains were flushed behind its
// back (their comments no longer name the elements), Remove still deletes
// the range elements leading to them (the interval elements need their
// end key) and the chains.
func removeFlushedRange(t *testing.T, b Backend, r Rules) {
	t.Helper()
	ctx := context.Background()
	if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	for _, c := range []string{nftmodel.ChainName(nftmodel.PrefixDNAT, fwtest.PortOwner), nftmodel.ChainName(nftmodel.PrefixHairpin, fwtest.PortOwner)} {
		if out, err := exec.Command("nft", "flush", "chain", "ip", "cnisuite_portmap", c).CombinedOutput(); err != nil {
			t.Fatalf("nft flush chain %s: %v: %s", c, err, out)
		}
	}
	if err := b.Remove(ctx, fwtest.PortOwner); err != nil {
		t.Fatalf("Remove after the chains were flushed: %v", err)
	}
	out, err := exec.Command("nft", "list", "table", "ip", "cnisuite_portmap").CombinedOutput()
	if err != nil || strings.Contains(string(out), "8000-8100") || strings.Contains(string(out), "jump pm") {
		t.Errorf("after Remove of flushed chains, the table holds (%v):\n%s", err, out)
	}
}
