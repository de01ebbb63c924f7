package fwapi

import (
	"context"
	"errors"
	"net"
	"testing"

	"cnisuite/pkg/types"
)

// TestOwnerNames pins what names an owner's chains, records and claims on
// every node (docs/formats.md): a change here renames what nodes hold.
func TestOwnerNames(t *testing.T) {
	o := Owner{Plugin: PluginPortmap, Network: "podman", ContainerID: "c1", IfName: "eth0"}
	if got, want := o.String(), "portmap/podman/c1/eth0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := o.Hash(), "0a253a19717f11fd55614b8f7bfe5242321e011f4cec1f414a2cfe5f4124d99c"; got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
	if got, want := o.NetHash(), "304d44378c086f5deb424ad25c5228036a62728902db5719877c27a983027171"; got != want {
		t.Errorf("NetHash() = %s, want %s", got, want)
	}
	// The separator keeps fields apart: "a/b" + "c" is not "a" + "b/c".
	o2 := o
	o2.Network, o2.ContainerID = "podmanc1", ""
	if o.Hash() == o2.Hash() {
		t.Error("two owners whose fields join to the same text share a hash")
	}
}

func TestPortMappingRanges(t *testing.T) {
	tests := []struct {
		m                 PortMapping
		isRange           bool
		hostLast, ctrLast int
		hostPorts         string
	}{
		{PortMapping{HostPort: 8080, ContainerPort: 80}, false, 8080, 80, "8080"},
		{PortMapping{HostPort: 8080, ContainerPort: 80, Range: 1}, false, 8080, 80, "8080"},
		{PortMapping{HostPort: 8000, ContainerPort: 8000, Range: 101}, true, 8100, 8100, "8000-8100"},
	}
	for _, tt := range tests {
		m := tt.m
		if m.IsRange() != tt.isRange || m.HostLast() != tt.hostLast || m.ContainerLast() != tt.ctrLast || m.HostPorts() != tt.hostPorts {
			t.Errorf("%+v: IsRange %v HostLast %d ContainerLast %d HostPorts %q, want %v %d %d %q", m,
				m.IsRange(), m.HostLast(), m.ContainerLast(), m.HostPorts(), tt.isRange, tt.hostLast, tt.ctrLast, tt.hostPorts)
		}
	}
}

func TestOverlaps(t *testing.T) {
	rng := PortMapping{HostPort: 8000, Range: 10, Protocol: "tcp"} // 8000-8009
	tests := []struct {
		o    PortMapping
		want bool
	}{
		{PortMapping{HostPort: 8000, Protocol: "tcp"}, true},
		{PortMapping{HostPort: 8009, Protocol: "tcp"}, true},
		{PortMapping{HostPort: 8010, Protocol: "tcp"}, false},
		{PortMapping{HostPort: 7999, Protocol: "tcp"}, false},
		{PortMapping{HostPort: 7990, Range: 10, Protocol: "tcp"}, false}, // 7990-7999
		{PortMapping{HostPort: 7990, Range: 11, Protocol: "tcp"}, true},  // 7990-8000
		{PortMapping{HostPort: 8005, Protocol: "udp"}, false},
	}
	for _, tt := range tests {
		if got := rng.Overlaps(tt.o); got != tt.want {
			t.Errorf("%+v overlaps %+v = %v, want %v", rng, tt.o, got, tt.want)
		}
		if got := tt.o.Overlaps(rng); got != tt.want {
			t.Errorf("%+v overlaps %+v = %v, want %v (not symmetric)", tt.o, rng, got, tt.want)
		}
	}
}

func TestForFamilyAndHosts(t *testing.T) {
	any4 := PortMapping{HostPort: 1, HostIP: net.IPv4zero}
	one4 := PortMapping{HostPort: 2, HostIP: net.ParseIP("10.0.0.1")}
	one6 := PortMapping{HostPort: 3, HostIP: net.ParseIP("fd00::1")}
	none := PortMapping{HostPort: 4}
	ms := []PortMapping{any4, one4, one6, none}
	ports := func(ms []PortMapping) (p []int) {
		for _, m := range ms {
			p = append(p, m.HostPort)
		}
		return p
	}
	if got := ports(ForFamily(ms, true)); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Errorf("ForFamily(v4) = %v, want [1 2 4]", got)
	}
	if got := ports(ForFamily(ms, false)); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("ForFamily(v6) = %v, want [3 4]", got)
	}
	for _, tt := range []struct {
		m    PortMapping
		want string
	}{{any4, "<nil>"}, {none, "<nil>"}, {PortMapping{HostIP: net.IPv6unspecified}, "<nil>"}, {one4, "10.0.0.1"}, {one6, "fd00::1"}} {
		if got := tt.m.SpecificHost().String(); got != tt.want {
			t.Errorf("SpecificHost(%v) = %s, want %s", tt.m.HostIP, got, tt.want)
		}
	}
}

func TestAddresses(t *testing.T) {
	_, n, _ := net.ParseCIDR("10.88.0.7/16")
	n.IP = net.ParseIP("10.88.0.7").To4()
	if got := SubnetOf(n).String(); got != "10.88.0.0/16" {
		t.Errorf("SubnetOf = %s, want 10.88.0.0/16", got)
	}
	for _, tt := range []struct{ ip, net, join string }{
		{"10.0.0.2", "10.0.0.2/32", "10.0.0.2:80"},
		{"::ffff:10.0.0.2", "10.0.0.2/32", "10.0.0.2:80"},
		{"fd00::2", "fd00::2/128", "[fd00::2]:80"},
	} {
		ip := net.ParseIP(tt.ip)
		if got := HostNet(ip).String(); got != tt.net {
			t.Errorf("HostNet(%s) = %s, want %s", tt.ip, got, tt.net)
		}
		if got := JoinHostPort(ip, 80); got != tt.join {
			t.Errorf("JoinHostPort(%s, 80) = %s, want %s", tt.ip, got, tt.join)
		}
	}
}

func TestRules(t *testing.T) {
	v4 := &net.IPNet{IP: net.ParseIP("10.88.0.2").To4(), Mask: net.CIDRMask(16, 32)}
	v6 := &net.IPNet{IP: net.ParseIP("fd00::2"), Mask: net.CIDRMask(64, 128)}
	mapped := []PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"}}
	only6 := []PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("fd00::1")}}
	tests := []struct {
		name string
		r    Rules
		want bool
	}{
		{"no port maps", Rules{Masq: []Masq{{Addr: *v4}}}, false},
		{"snat, v4 container, v4 mapping", Rules{PortMaps: &PortMaps{ContainerV4: v4, Mappings: mapped, SNAT: true}}, true},
		{"no snat", Rules{PortMaps: &PortMaps{ContainerV4: v4, Mappings: mapped}}, false},
		{"masqAll", Rules{PortMaps: &PortMaps{ContainerV4: v4, Mappings: mapped, SNAT: true, MasqAll: true}}, false},
		{"v6 container only", Rules{PortMaps: &PortMaps{ContainerV6: v6, Mappings: mapped, SNAT: true}}, false},
		{"v6 mappings only", Rules{PortMaps: &PortMaps{ContainerV4: v4, Mappings: only6, SNAT: true}}, false},
	}
	for _, tt := range tests {
		if got := tt.r.NeedsLocalnetGuard(); got != tt.want {
			t.Errorf("%s: NeedsLocalnetGuard = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !(Rules{}).Empty() || (Rules{SpoofCheck: &SpoofCheck{}}).Empty() {
		t.Error("Empty is wrong for the zero Rules or one with a spoof check")
	}
	pm := &PortMaps{ContainerV4: v4, ContainerV6: v6, ConditionsV4: []string{"a"}, ConditionsV6: []string{"b"}}
	if n, c := pm.Family(true); n != v4 || c[0] != "a" {
		t.Errorf("Family(v4) = %v %v", n, c)
	}
	if n, c := pm.Family(false); n != v6 || c[0] != "b" {
		t.Errorf("Family(v6) = %v %v", n, c)
	}
}

// TestErrorsAndContext: the sentinels carry the CNI codes their docs give,
// and the claimed-ports mark is seen only on a context that got it.
func TestErrorsAndContext(t *testing.T) {
	if !errors.Is(ErrMissing, types.ErrUnknownContainer) || ErrMissing.Error() != "firewall rule missing: "+types.ErrUnknownContainer.Error() {
		t.Errorf("ErrMissing = %v, want it to wrap ErrUnknownContainer", ErrMissing)
	}
	if !errors.Is(ErrConflict, types.ErrTryAgain) {
		t.Errorf("ErrConflict = %v, want it to wrap ErrTryAgain", ErrConflict)
	}
	ctx := context.Background()
	if PortsClaimed(ctx) || !PortsClaimed(WithPortsClaimed(ctx)) {
		t.Error("PortsClaimed does not follow WithPortsClaimed")
	}
}
