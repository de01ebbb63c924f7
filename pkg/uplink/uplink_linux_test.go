package uplink

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

func TestMain(m *testing.M) { userns.Main(m) }

// node makes a fresh namespace and runs each ip command there.
func node(t *testing.T, cmds ...string) *ns.NetNS {
	t.Helper()
	n := userns.NewNS(t)
	for _, c := range cmds {
		err := n.Do(func() error {
			out, err := exec.Command("ip", strings.Fields(c)...).CombinedOutput()
			if err != nil {
				return errors.New(strings.TrimSpace(string(out)))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ip %s: %v", c, err)
		}
	}
	return n
}

// links are two uplinks of different MTUs, up, with addresses of both
// families (IPv6 without DAD, so routes through them are accepted at once).
var links = []string{
	"link add up1 mtu 1400 type veth peer name up1p",
	"link add up2 mtu 1300 type veth peer name up2p",
	"link add side mtu 1200 type veth peer name sidep",
	"link set up1 up", "link set up1p up", "link set up2 up", "link set up2p up", "link set side up", "link set sidep up",
	"addr add 192.0.2.1/24 dev up1", "addr add 198.51.100.1/24 dev up2", "addr add 203.0.113.1/24 dev side",
	"addr add 2001:db8:1::1/64 dev up1 nodad", "addr add 2001:db8:2::1/64 dev up2 nodad",
}

// TestUplinks: the uplinks are the default routes' interfaces, of both
// families, every next hop counting; the MTU is their lowest; a link with
// only a subnet route is none; no default route gives none and 0.
func TestUplinks(t *testing.T) {
	tests := []struct {
		name   string
		routes []string
		names  []string
		mtu    int
	}{
		{"none", nil, nil, 0},
		{"v4 only", []string{"route add default via 192.0.2.2 dev up1"}, []string{"up1"}, 1400},
		{"v4 and v6 apart", []string{"route add default via 192.0.2.2 dev up1", "-6 route add default via 2001:db8:2::2 dev up2"},
			[]string{"up1", "up2"}, 1300},
		{"multipath", []string{"route add default nexthop via 192.0.2.2 dev up1 nexthop via 198.51.100.2 dev up2"},
			[]string{"up1", "up2"}, 1300},
		{"a subnet route is no uplink", []string{"route add 10.0.0.0/8 via 203.0.113.2 dev side", "route add default via 192.0.2.2 dev up1"},
			[]string{"up1"}, 1400},
		{"another table", []string{"route add default via 192.0.2.2 dev up1 table 10"}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := node(t, append(append([]string{}, links...), tt.routes...)...)
			var names []string
			var mtu int
			err := n.Do(func() (err error) {
				if names, err = DefaultRouteLinkNames(nil); err != nil {
					return err
				}
				mtu, err = MTU(nil, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names, tt.names) || mtu != tt.mtu {
				t.Errorf("uplinks %v, MTU %d; want %v, %d", names, mtu, tt.names, tt.mtu)
			}
		})
	}
}

// TestMTUOfTable: a table's own default route decides its MTU.
func TestMTUOfTable(t *testing.T) {
	n := node(t, append(append([]string{}, links...),
		"route add default via 192.0.2.2 dev up1", "route add default via 198.51.100.2 dev up2 table 10")...)
	var main, ten, empty int
	err := n.Do(func() (err error) {
		if main, err = MTU(nil, 0); err != nil {
			return err
		}
		if ten, err = MTU(nil, 10); err != nil {
			return err
		}
		empty, err = MTU(nil, 11)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if main != 1400 || ten != 1300 || empty != 0 {
		t.Errorf("MTU of main, table 10, table 11 = %d, %d, %d; want 1400, 1300, 0", main, ten, empty)
	}
}

// TestVRFTable: a link enslaved to a VRF gives the VRF's table; one in
// none, one enslaved to a bridge, or a missing one give 0.
func TestVRFTable(t *testing.T) {
	n := node(t, "link add br0 type bridge", "link add p1 type veth peer name p1p", "link set p1 master br0",
		"link add free type veth peer name freep")
	vrf := n.Do(func() error { return exec.Command("ip", "link", "add", "vrf1", "type", "vrf", "table", "10").Run() })
	var got []int
	err := n.Do(func() error {
		if vrf == nil {
			if err := exec.Command("ip", "link", "set", "free", "master", "vrf1").Run(); err != nil {
				return err
			}
		}
		for _, name := range []string{"free", "p1", "missing"} {
			got = append(got, VRFTable(nil, name))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{10, 0, 0}
	if vrf != nil {
		t.Logf("no VRF in this kernel (%v): only the cases without one", vrf)
		want[0] = 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("VRFTable(free, p1, missing) = %v, want %v", got, want)
	}
}
