package main

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestKeysInAnotherCase: a configuration whose keys differ from ours only
// in case (as encoding/json, and so the reference plugin, reads them) is
// read the same through the plugin binary. The bridge holds the gateway
// (IsGateway), the container's interface has the MTU (MTU), host-local
// leased from the range (Ranges, Subnet).
func TestKeysInAnotherCase(t *testing.T) {
	ipam := fmt.Sprintf(`{"type":"host-local","dataDir":%q,"Ranges":[[{"Subnet":"10.96.8.0/24"}]]}`, t.TempDir())
	n := newNet(t, "1.0.0", "bkeycase0", `"IsGateway":true,"MTU":1400`, ipam)
	c := n.add("keycase")
	if got := bridgeAddrs(t, n.bridge); !slices.Contains(got, "10.96.8.1/24") {
		t.Errorf("bridge addresses %v, want the gateway 10.96.8.1/24 (IsGateway)", got)
	}
	_, subnet, _ := net.ParseCIDR("10.96.8.0/24")
	if ip := c.addr(4); ip == nil || !subnet.Contains(ip) {
		t.Errorf("container address %v, want one of 10.96.8.0/24 (Ranges)", ip)
	}
	var mtu int
	if err := in(c.ns, func() error {
		l, err := netlink.LinkByName("eth0")
		if err == nil {
			mtu = l.Attrs().MTU
		}
		return err
	}); err != nil || mtu != 1400 {
		t.Errorf("container eth0 MTU %d (%v), want 1400 (MTU)", mtu, err)
	}
	n.del(c)
}
