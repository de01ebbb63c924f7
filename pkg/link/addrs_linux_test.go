package link

import (
	"net"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestLinkAddrs(t *testing.T) {
	n := newNS(t)
	l, other := n.veth(t, "dum0", "dum1"), n.link(t, "dum1")
	for _, a := range []struct {
		l    netlink.Link
		cidr string
	}{{l, "10.1.0.1/24"}, {l, "fd00::1/64"}, {other, "10.2.0.1/24"}} {
		addr, ipn, _ := net.ParseCIDR(a.cidr)
		ipn.IP = addr
		if err := n.h.AddrAdd(a.l, &netlink.Addr{IPNet: ipn}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		family int
		want   string
	}{
		{"all", netlink.FAMILY_ALL, "10.1.0.1/24 fd00::1/64"},
		{"ipv4", netlink.FAMILY_V4, "10.1.0.1/24"},
		{"ipv6", netlink.FAMILY_V6, "fd00::1/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n.do(t, func() error {
				addrs, err := LinkAddrs(l.Attrs().Index, tt.family)
				if err != nil {
					return err
				}
				var got []string
				for _, a := range addrs {
					if a.LinkIndex != l.Attrs().Index {
						t.Errorf("address %v of link %d listed", a.IPNet, a.LinkIndex)
					}
					if !a.IP.IsLinkLocalUnicast() {
						got = append(got, a.IPNet.String())
					}
				}
				if strings.Join(got, " ") != tt.want {
					t.Errorf("LinkAddrs() = %v, want %s", got, tt.want)
				}
				return nil
			})
		})
	}
}
