package ifconf

import (
	"slices"
	"strconv"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/sysctl"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with a network
// namespace of its own (test/userns), as root or not.
func TestMain(m *testing.M) { userns.Main(m) }

// vethPairNS makes a veth pair, dum0 and dum1, in a fresh namespace and
// returns a function that runs fn there.
func vethPairNS(t *testing.T) func(t *testing.T, fn func()) {
	t.Helper()
	n := userns.NewNS(t)
	if err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "dum0"}, PeerName: "dum1"})
	}); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, fn func()) {
		t.Helper()
		if err := n.Do(func() error { fn(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func procValue(t *testing.T, name string) int {
	t.Helper()
	v, err := sysctl.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestDevConf(t *testing.T) {
	in := vethPairNS(t)
	tests := []struct {
		name  string
		v4    bool
		key   string
		value int
	}{
		{"ipv4_arp_notify", true, "arp_notify", 1},
		{"ipv4_route_localnet", true, "route_localnet", 1},
		{"ipv6_accept_ra", false, "accept_ra", 0},
		{"ipv6_accept_dad", false, "accept_dad", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in(t, func() { checkDevConf(t, tt.v4, tt.key, tt.value) })
		})
	}
}

// checkDevConf checks that dum0's setting reads as /proc/sys shows it, and
// that ensuring value writes it on dum0 only.
func checkDevConf(t *testing.T, v4 bool, key string, value int) {
	t.Helper()
	fam := "ipv6"
	if v4 {
		fam = "ipv4"
	}
	path := "net/" + fam + "/conf/dum0/" + key
	d, err := ReadDevConf("dum0", 0)
	if err != nil {
		t.Fatal(err)
	}
	get, ensure := d.IPv6, d.EnsureIPv6
	if v4 {
		get, ensure = d.IPv4, d.EnsureIPv4
	}
	otherBefore := procValue(t, "net/"+fam+"/conf/dum1/"+key)
	if got, ok := get(key); !ok || got != procValue(t, path) {
		t.Fatalf("before: netlink reads %s=%d (%v), /proc/sys has %d", key, got, ok, procValue(t, path))
	}
	if err := ensure(key, value); err != nil {
		t.Fatal(err)
	}
	if got := procValue(t, path); got != value {
		t.Errorf("after: /proc/sys has %s=%d, want %d", key, got, value)
	}
	if got := procValue(t, "net/"+fam+"/conf/dum1/"+key); got != otherBefore {
		t.Errorf("the other link's %s changed too (%d, was %d)", key, got, otherBefore)
	}
}

func TestEnableForwardingReadsNetconf(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		for _, want := range []int{0, 1} {
			if err := sysctl.Set("net/ipv4/ip_forward", strconv.Itoa(want)); err != nil {
				t.Fatal(err)
			}
			got, err := netconfForwarding(netlink.FAMILY_V4)
			if err != nil || got != want {
				t.Errorf("netconfForwarding() = %d, %v; /proc/sys/net/ipv4/ip_forward = %d", got, err, want)
			}
		}
		if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
			t.Fatal(err)
		}
		if err := EnableForwarding(true, false); err != nil {
			t.Fatal(err)
		}
		if got := procValue(t, "net/ipv4/ip_forward"); got != 1 {
			t.Errorf("ip_forward = %d after EnableForwarding, want 1", got)
		}
	})
}

// TestForwardingOff: STATUS's and the repair's look at forwarding names
// exactly the families asked for whose forwarding is off, as /proc/sys
// shows it.
func TestForwardingOff(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		keys := map[string]string{"net.ipv4.ip_forward": "net/ipv4/ip_forward", "net.ipv6.conf.all.forwarding": "net/ipv6/conf/all/forwarding"}
		for _, v4 := range []string{"0", "1"} {
			for _, v6 := range []string{"0", "1"} {
				for key, val := range map[string]string{"net.ipv4.ip_forward": v4, "net.ipv6.conf.all.forwarding": v6} {
					if err := sysctl.Set(keys[key], val); err != nil {
						t.Fatal(err)
					}
				}
				var want []string
				if v4 == "0" {
					want = append(want, "net.ipv4.ip_forward")
				}
				if v6 == "0" {
					want = append(want, "net.ipv6.conf.all.forwarding")
				}
				if got := ForwardingOff(true, true); !slices.Equal(got, want) {
					t.Errorf("ip_forward=%s, all.forwarding=%s: ForwardingOff = %v, want %v", v4, v6, got, want)
				}
				if got := ForwardingOff(false, false); len(got) != 0 {
					t.Errorf("no family asked for: ForwardingOff = %v, want none", got)
				}
			}
		}
	})
}
