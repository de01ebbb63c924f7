package link

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

// A route that a plugin chained after ours moved out of the main table
// (sbr puts the pod's routes in a table of their own) still counts for
// CHECK; a route that is gone does not. Before, CHECK with sbr chained
// failed: "route to 10.88.0.0/16 on eth0: missing".
func TestVerifyIfaceRouteInAnotherTable(t *testing.T) {
	n := newNS(t)
	l := n.veth(t, "dum0", "dum1")
	ipc, _ := types.ParseCIDR("10.66.0.2/24")
	res := &types.Result{Interfaces: []*types.Interface{{Name: "dum0"}},
		IPs: []*types.IPConfig{{Interface: types.Ptr(0), Address: *ipc}}}
	n.do(t, func() error {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ipc.IP, Mask: ipc.Mask}, Flags: unix.IFA_F_NODAD}
		if err := netlink.AddrAdd(l, addr); err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		if err := VerifyIface("dum0", res); err != nil {
			t.Fatalf("VerifyIface with the subnet route in main = %v", err)
		}
		_, subnet, _ := net.ParseCIDR("10.66.0.0/24")
		main := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: subnet, Scope: netlink.SCOPE_LINK, Src: ipc.IP, Protocol: unix.RTPROT_KERNEL}
		if err := netlink.RouteDel(main); err != nil {
			t.Fatal(err)
		}
		moved := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: subnet, Scope: netlink.SCOPE_LINK, Table: 100}
		if err := netlink.RouteAdd(moved); err != nil {
			t.Fatal(err)
		}
		if err := VerifyIface("dum0", res); err != nil {
			t.Errorf("VerifyIface with the subnet route moved to table 100 = %v, want nil", err)
		}
		if err := netlink.RouteDel(moved); err != nil {
			t.Fatal(err)
		}
		if err := VerifyIface("dum0", res); !errors.Is(err, ErrMissing) {
			t.Errorf("VerifyIface without the subnet route = %v, want ErrMissing", err)
		}
		return nil
	})
}

func TestCheckAttrs(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:0a:00:00:02")
	l := &netlink.LinkAttrs{HardwareAddr: mac, MTU: 1500}
	for _, tc := range []struct {
		want types.Interface
		err  string
	}{
		{types.Interface{}, ""},
		{types.Interface{Mac: "0A:58:0A:00:00:02", Mtu: 1500}, ""},
		{types.Interface{Mac: "0a:58:0a:00:00:03"}, "MAC 0a:58:0a:00:00:02, prevResult says 0a:58:0a:00:00:03"},
		{types.Interface{Mtu: 9000}, "MTU 1500, prevResult says 9000"},
	} {
		err := CheckAttrs(l, &tc.want)
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
			t.Errorf("CheckAttrs(%+v) = %v, want %q", tc.want, err, tc.err)
		}
	}
}

// VerifyIface passes on what ConfigureIface made and fails, wrapping
// ErrMissing, on each part of it taken away.
func TestVerifyIface(t *testing.T) {
	addrs, routes := []string{"10.1.0.2/24 10.1.0.1", "fd00::2/64"}, []string{"0.0.0.0/0", "10.9.0.0/16 via 10.1.0.9"}
	tests := []struct {
		name    string
		ifname  string
		breakIt string // an `ip` command run in the namespace first
		res     *types.Result
		wantErr error
	}{
		{name: "as_configured"},
		{name: "address_gone", breakIt: "addr del 10.1.0.2/24 dev dum0", wantErr: ErrMissing},
		{name: "ipv6_address_gone", breakIt: "addr del fd00::2/64 dev dum0", wantErr: ErrMissing},
		{name: "default_route_gone", breakIt: "route del default", wantErr: ErrMissing},
		{name: "route_gone", breakIt: "route del 10.9.0.0/16", wantErr: ErrMissing},
		{name: "interface_gone", ifname: "nosuch0", wantErr: ErrMissing},
		{name: "address_not_listed", res: attachment(t, []string{"dum0"}, []string{"10.1.0.3/24"}, nil), wantErr: ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := configured(t, attachment(t, []string{"dum0"}, addrs, routes), ConfigureOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.breakIt != "" {
				n.do(t, func() error { return exec.Command("ip", strings.Fields(tt.breakIt)...).Run() })
			}
			res, ifname := tt.res, tt.ifname
			if res == nil {
				res = attachment(t, []string{"dum0"}, addrs, routes)
			}
			if ifname == "" {
				ifname = "dum0"
			}
			err = n.Do(func() error { return VerifyIface(ifname, res) })
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("VerifyIface() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
