package link

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// EnsureBridge makes the bridge with its MTU, a MAC set by user space,
// promisc when asked, router advertisements ignored, up; an existing
// bridge is adopted as it is (its MTU kept) and set up; a name taken by
// another kind of link is refused.
func TestEnsureBridge(t *testing.T) {
	tests := []struct {
		name     string
		before   func(t *testing.T, n testNS) // what the namespace holds first
		opts     BridgeOptions
		wantErr  error
		wantMTU  int
		promisc  bool
		assigned string // addr_assign_type: 3 = set by user space
	}{
		{name: "create", opts: BridgeOptions{MTU: 1400, Promisc: true}, wantMTU: 1400, promisc: true, assigned: "3"},
		{name: "create_default_mtu", wantMTU: 1500, assigned: "3"},
		{name: "adopt_keeps_mtu", before: func(t *testing.T, n testNS) {
			n.bridge(t, "br0")
			if err := n.h.LinkSetMTU(n.link(t, "br0"), 1300); err != nil {
				t.Fatal(err)
			}
		}, opts: BridgeOptions{MTU: 1400}, wantMTU: 1300, assigned: "1"},
		{name: "adopt_up_unchanged", before: func(t *testing.T, n testNS) {
			if err := n.h.LinkSetUp(n.bridge(t, "br0")); err != nil {
				t.Fatal(err)
			}
		}, wantMTU: 1500, assigned: "1"},
		{name: "taken_by_veth", before: func(t *testing.T, n testNS) { n.veth(t, "br0", "dum1") }, wantErr: ErrNotBridge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNS(t)
			if tt.before != nil {
				tt.before(t, n)
			}
			o := tt.opts
			o.Name = "br0"
			var br *netlink.Bridge
			err := n.Do(func() (err error) { br, err = EnsureBridge(n.h, o); return err })
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("EnsureBridge() = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := mustShow(t, n.NetNS, "br0")
			if got.LinkInfo.Kind != "bridge" || !got.up() || got.MTU != tt.wantMTU || (got.Promiscuity > 0) != tt.promisc {
				t.Errorf("ip shows %s %v mtu %d promiscuity %d; want an up bridge, mtu %d, promisc %v",
					got.LinkInfo.Kind, got.Flags, got.MTU, got.Promiscuity, tt.wantMTU, tt.promisc)
			}
			if br.Attrs().Index != n.link(t, "br0").Attrs().Index || br.Flags&unix.IFF_UP == 0 {
				t.Errorf("EnsureBridge returned %+v, not the bridge as it now is", br.Attrs())
			}
			if ra := netFile(t, n, "proc/sys/net/ipv6/conf/br0/accept_ra"); ra != "0" {
				t.Errorf("accept_ra = %s, want 0", ra)
			}
			if a := netFile(t, n, "sys/class/net/br0/addr_assign_type"); a != tt.assigned {
				t.Errorf("addr_assign_type = %s, want %s", a, tt.assigned)
			}
		})
	}
}

// VLAN filtering is asked for at creation: where the kernel lacks it (as
// here), the error says so and no bridge is left; elsewhere ip shows it on.
func TestEnsureBridgeVlanFiltering(t *testing.T) {
	n := newNS(t)
	err := n.Do(func() error { _, err := EnsureBridge(n.h, BridgeOptions{Name: "br0", VlanFiltering: true}); return err })
	got, ok := show(t, n.NetNS, "br0")
	switch {
	case errors.Is(err, ErrVlanUnsupported):
		if ok {
			t.Errorf("the kernel refused VLAN filtering, yet br0 shows: %+v", got)
		}
	case err != nil:
		t.Fatalf("EnsureBridge(vlan filtering) = %v", err)
	case got.LinkInfo.Data.VlanFiltering != 1:
		t.Errorf("ip shows vlan_filtering %d, want 1", got.LinkInfo.Data.VlanFiltering)
	}
}

// LookupBridge finds a bridge, tells another kind of link apart and
// reports a missing one as not found.
func TestLookupBridge(t *testing.T) {
	n := newNS(t)
	n.bridge(t, "br0")
	n.veth(t, "dum0", "dum1")
	if br, err := LookupBridge(n.h, "br0"); err != nil || br.Name != "br0" {
		t.Errorf("LookupBridge(br0) = %v, %v", br, err)
	}
	if _, err := LookupBridge(n.h, "dum0"); !errors.Is(err, ErrNotBridge) {
		t.Errorf("LookupBridge(veth) = %v, want ErrNotBridge", err)
	}
	if _, err := LookupBridge(n.h, "nosuch0"); !IsNotFound(err) && !errors.Is(err, errLinkNotFound) {
		t.Errorf("LookupBridge(missing) = %v, want not found", err)
	}
}

// DeleteBridgeIfNoPorts removes a bridge without ports only; a bridge with
// a port, a missing name and a link of another kind are left alone.
func TestDeleteBridgeIfNoPorts(t *testing.T) {
	n := newNS(t)
	n.bridge(t, "br0")
	used := n.bridge(t, "br1")
	if err := n.h.LinkSetMaster(n.veth(t, "dum0", "dum1"), used); err != nil {
		t.Fatal(err)
	}
	n.veth(t, "dum2", "dum3")
	for _, name := range []string{"br0", "br1", "dum2", "nosuch0"} {
		if err := DeleteBridgeIfNoPorts(n.h, name); err != nil {
			t.Errorf("DeleteBridgeIfNoPorts(%s) = %v", name, err)
		}
	}
	for name, want := range map[string]bool{"br0": false, "br1": true, "dum2": true} {
		if _, ok := show(t, n.NetNS, name); ok != want {
			t.Errorf("after DeleteBridgeIfNoPorts, %s shows: %v, want %v", name, ok, want)
		}
	}
}

// EnsureMACPinned sets a bridge's MAC to itself when the kernel chose it,
// so the kernel stops changing it as ports come and go; a MAC already set
// stays set. PinMAC of a link without a MAC does nothing.
func TestEnsureMACPinned(t *testing.T) {
	for _, sysfsHere := range []bool{true, false} {
		t.Run(fmt.Sprintf("sysfs_of_own_namespace_%v", sysfsHere), func(t *testing.T) {
			n := newNS(t)
			br := n.bridge(t, "br0")
			pin := func() error { return EnsureMACPinned(n.h, br) }
			if sysfsHere { // /sys shows this namespace only when inside it
				pin = func() error {
					return n.Do(func() error {
						if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
							return err
						}
						defer unix.Unmount("/sys", unix.MNT_DETACH)
						return EnsureMACPinned(n.h, br)
					})
				}
			}
			for try := 0; try < 2; try++ {
				if err := pin(); err != nil {
					t.Fatalf("EnsureMACPinned() = %v", err)
				}
				if a := netFile(t, n, "sys/class/net/br0/addr_assign_type"); a != "3" {
					t.Errorf("addr_assign_type = %s after pinning, want 3", a)
				}
				if mac := mustShow(t, n.NetNS, "br0").Address; mac != br.Attrs().HardwareAddr.String() {
					t.Errorf("MAC %s after pinning, want %s as before", mac, br.Attrs().HardwareAddr)
				}
			}
		})
	}
	n := newNS(t)
	if err := PinMAC(n.h, n.link(t, "lo")); err != nil {
		t.Errorf("PinMAC(lo) = %v", err)
	}
	if err := PinMAC(n.h, &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "gone0", Index: 999, HardwareAddr: []byte{2, 0, 0, 0, 0, 1}}}); err == nil {
		t.Errorf("PinMAC of a missing bridge = nil, want an error")
	}
}

func TestIsNotFound(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{netlink.LinkNotFoundError{}, true},
		{fmt.Errorf("x: %w", unix.ENODEV), true},
		{unix.ENOENT, true},
		{unix.ESRCH, true},
		{unix.EADDRNOTAVAIL, true},
		{unix.EEXIST, false},
		{errors.New("no such thing"), false},
		{nil, false},
	} {
		if got := IsNotFound(tc.err); got != tc.want {
			t.Errorf("IsNotFound(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
