package main

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/types"
)

// TestLayer2 attaches two containers without IPAM: the result holds the
// three interfaces and no address, the container links are up, the test's
// own addresses let them talk, CHECK passes (the reference fails it), and
// the bridge MAC stays put as ports come and go.
func TestLayer2(t *testing.T) {
	for _, v := range []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			br := "brl2-" + v[:1] + v[2:3] + v[4:]
			n := newNet(t, v, br, "", "{}")
			a := n.add("l2-a")
			brMAC := hostLink(t, br).Attrs().HardwareAddr.String()
			b := n.add("l2-b")
			for _, c := range []*ctr{a, b} {
				if len(c.res.IPs) != 0 || len(c.res.Interfaces) != 3 {
					t.Fatalf("result = %+v, want 3 interfaces and no IP", c.res)
				}
				if got := c.res.Interfaces[ifBridge].Mac; got != brMAC {
					t.Errorf("result bridge MAC = %s, want %s", got, brMAC)
				}
			}
			setAddr(t, a, "192.168.77.1/24")
			setAddr(t, b, "192.168.77.2/24")
			if err := reach(a.ns, b.ns, net.ParseIP("192.168.77.2")); err != nil {
				t.Errorf("a → b over the layer-2 bridge: %v", err)
			}
			if v >= "0.4.0" {
				if err := n.check(a); err != nil {
					t.Errorf("CHECK in layer 2 mode = %v", err)
				}
			}
			n.del(a)
			c := n.add("l2-c")
			n.del(b)
			n.del(c)
			if got := hostLink(t, br).Attrs().HardwareAddr.String(); got != brMAC {
				t.Errorf("bridge MAC moved from %s to %s as ports came and went", brMAC, got)
			}
			if ports := bridgePorts(t, br); len(ports) != 0 {
				t.Errorf("ports left after DEL: %v", ports)
			}
		})
	}
}

func setAddr(t *testing.T, c *ctr, cidr string) {
	t.Helper()
	err := c.ns.Do(func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if l.Attrs().OperState != netlink.OperUp {
			t.Errorf("container eth0 is %v, want up", l.Attrs().OperState)
		}
		ipn, err := types.ParseCIDR(cidr)
		if err != nil {
			return err
		}
		return netlink.AddrAdd(l, &netlink.Addr{IPNet: ipn})
	})
	if err != nil {
		t.Fatalf("adding %s in %s: %v", cidr, c.id, err)
	}
}
