package fwfake

import (
	"context"
	"errors"
	"net"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
)

// TestFakeConflicts: with Conflicts, the fake refuses what the nftables
// backend refuses (TestBackendLifecycle shows the backend's own fwapi.ErrConflict):
// a host port or masqueraded address another owner holds; the same owner
// again, another protocol, host address or family, a released port, and
// the iptables kind are fine.
func TestFakeConflicts(t *testing.T) {
	ctx := context.Background()
	ports := func(ms ...fwapi.PortMapping) fwapi.Rules {
		return fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.Mappings, p.ContainerV6 = ms, nil })
	}
	tcp8080 := fwapi.PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"}
	tcpRange := fwapi.PortMapping{HostPort: 8000, ContainerPort: 8000, Protocol: "tcp", Range: 101}
	a, b := fwtest.PortOwner, fwtest.PortOwner
	b.ContainerID = "ctr2"
	tests := []struct {
		name     string
		kind     string
		first    fwapi.Rules
		second   fwapi.Rules
		conflict bool
	}{
		{"same host port", fwapi.KindNFTables, ports(tcp8080), ports(tcp8080), true},
		{"another protocol", fwapi.KindNFTables, ports(tcp8080), ports(fwapi.PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "udp"}), false},
		{"another host address", fwapi.KindNFTables, ports(fwapi.PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.1")}),
			ports(fwapi.PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.2")}), false},
		{"same masqueraded address", fwapi.KindNFTables, fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}},
			fwapi.Rules{Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}}, true},
		{"iptables allows duplicates", fwapi.KindIPTables, ports(tcp8080), ports(tcp8080), false},
		{"single port inside a range", fwapi.KindNFTables, ports(tcpRange), ports(fwapi.PortMapping{HostPort: 8100, ContainerPort: 80, Protocol: "tcp"}), true},
		{"range over a single port", fwapi.KindNFTables, ports(tcp8080), ports(fwapi.PortMapping{HostPort: 8070, ContainerPort: 8070, Protocol: "tcp", Range: 11}), true},
		{"overlapping ranges", fwapi.KindNFTables, ports(tcpRange), ports(fwapi.PortMapping{HostPort: 7990, ContainerPort: 7990, Protocol: "tcp", Range: 11}), true},
		{"port one past a range", fwapi.KindNFTables, ports(tcpRange), ports(fwapi.PortMapping{HostPort: 8101, ContainerPort: 80, Protocol: "tcp"}), false},
		{"range of another protocol", fwapi.KindNFTables, ports(tcpRange), ports(fwapi.PortMapping{HostPort: 8000, ContainerPort: 8000, Protocol: "udp", Range: 101}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.kind)
			f.Conflicts = true
			if err := f.Ensure(ctx, a, tc.first); err != nil {
				t.Fatalf("Ensure(first): %v", err)
			}
			if err := f.Ensure(ctx, a, tc.first); err != nil {
				t.Errorf("Ensure(first) again, same owner: %v", err)
			}
			err := f.Ensure(ctx, b, tc.second)
			if got := errors.Is(err, fwapi.ErrConflict); got != tc.conflict {
				t.Fatalf("Ensure(second owner) = %v, want conflict %v", err, tc.conflict)
			}
			if !tc.conflict {
				return
			}
			if err := f.Remove(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := f.Ensure(ctx, b, tc.second); err != nil {
				t.Errorf("Ensure(second owner) after the first was removed: %v", err)
			}
		})
	}
}
