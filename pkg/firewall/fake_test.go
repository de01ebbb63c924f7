package firewall

import (
	"context"
	"errors"
	"net"
	"testing"

	"cnisuite/test/fwtest"
)

// TestFakeConflicts: with Conflicts, the fake refuses what the nftables
// backend refuses (TestBackendLifecycle shows the backend's own ErrConflict):
// a host port or masqueraded address another owner holds; the same owner
// again, another protocol, host address or family, a released port, and
// the iptables kind are fine.
func TestFakeConflicts(t *testing.T) {
	ctx := context.Background()
	ports := func(ms ...PortMapping) Rules {
		return fwtest.PortRules(t, func(p *PortMaps) { p.Mappings, p.ContainerV6 = ms, nil })
	}
	tcp8080 := PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"}
	tcpRange := PortMapping{HostPort: 8000, ContainerPort: 8000, Protocol: "tcp", Range: 101}
	a, b := fwtest.PortOwner, fwtest.PortOwner
	b.ContainerID = "ctr2"
	tests := []struct {
		name     string
		kind     string
		first    Rules
		second   Rules
		conflict bool
	}{
		{"same host port", KindNFTables, ports(tcp8080), ports(tcp8080), true},
		{"another protocol", KindNFTables, ports(tcp8080), ports(PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "udp"}), false},
		{"another host address", KindNFTables, ports(PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.1")}),
			ports(PortMapping{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.2")}), false},
		{"same masqueraded address", KindNFTables, Rules{Masq: []Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}},
			Rules{Masq: []Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}}}, true},
		{"iptables allows duplicates", KindIPTables, ports(tcp8080), ports(tcp8080), false},
		{"single port inside a range", KindNFTables, ports(tcpRange), ports(PortMapping{HostPort: 8100, ContainerPort: 80, Protocol: "tcp"}), true},
		{"range over a single port", KindNFTables, ports(tcp8080), ports(PortMapping{HostPort: 8070, ContainerPort: 8070, Protocol: "tcp", Range: 11}), true},
		{"overlapping ranges", KindNFTables, ports(tcpRange), ports(PortMapping{HostPort: 7990, ContainerPort: 7990, Protocol: "tcp", Range: 11}), true},
		{"port one past a range", KindNFTables, ports(tcpRange), ports(PortMapping{HostPort: 8101, ContainerPort: 80, Protocol: "tcp"}), false},
		{"range of another protocol", KindNFTables, ports(tcpRange), ports(PortMapping{HostPort: 8000, ContainerPort: 8000, Protocol: "udp", Range: 101}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(tc.kind)
			f.Conflicts = true
			if err := f.Ensure(ctx, a, tc.first); err != nil {
				t.Fatalf("Ensure(first): %v", err)
			}
			if err := f.Ensure(ctx, a, tc.first); err != nil {
				t.Errorf("Ensure(first) again, same owner: %v", err)
			}
			err := f.Ensure(ctx, b, tc.second)
			if got := errors.Is(err, ErrConflict); got != tc.conflict {
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
