package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"cnisuite/test/sandbox"
)

// An MTU below 1280 on an interface holding an IPv6 address would make the
// kernel drop the address for good (DEL restores the MTU, not the address):
// ADD refuses it with code 7 and changes nothing. With only a link-local
// address, which the kernel brings back itself, it is allowed.
func TestMTUBelowIPv6Minimum(t *testing.T) {
	sandbox.Require(t)
	const v = "1.0.0"
	c := newVethContainer(t, "tu6m")
	before, beforeValue := c.snapshot()
	prev := `,"prevResult":` + prevResultJSON(v, c.netns.Path(), before.MAC) + `,"args":{"cni":{"mtu":1000}}`
	rt := &libcni.RuntimeConf{ContainerID: "mtu6", NetNS: c.netns.Path(), IfName: testIfName}
	conf := pluginConf(t, tuningConf(v, t.TempDir(), prev))

	c.do("adding fd77::2/64", func() error { return addrAdd("fd77::2/64") })
	_, err := sandbox.Runtime(t).AddNetwork(ctx, conf, rt)
	var ce *cnitypes.Error
	if !errors.As(err, &ce) || ce.Code != 7 || !strings.Contains(ce.Msg, "mtu 1000: below 1280") || !strings.Contains(ce.Msg, "fd77::2/64") {
		t.Fatalf("ADD with mtu 1000 over fd77::2/64 = %v, want code 7 naming the MTU and the address", err)
	}
	wantRestored(t, c, before, beforeValue)
	c.do("finding fd77::2", func() error { return hasAddr("fd77::2") })

	c.do("removing fd77::2/64", func() error { return addrDel("fd77::2/64") })
	if _, err := sandbox.Runtime(t).AddNetwork(ctx, conf, rt); err != nil {
		t.Fatalf("ADD with mtu 1000 on an interface without IPv6 addresses = %v, want success", err)
	}
	if err := sandbox.Runtime(t).DelNetwork(ctx, conf, rt); err != nil {
		t.Fatalf("DEL: %v", err)
	}
}

// testAddr is the test interface and cidr as an address of it.
func testAddr(cidr string) (netlink.Link, *netlink.Addr, error) {
	l, err := netlink.LinkByName(testIfName)
	if err != nil {
		return nil, nil, err
	}
	a, err := netlink.ParseAddr(cidr)
	return l, a, err
}

func addrAdd(cidr string) error {
	l, a, err := testAddr(cidr)
	if err != nil {
		return err
	}
	a.Flags = 0x80 // IFA_F_NODAD: no duplicate address detection wait
	return netlink.AddrAdd(l, a)
}

func addrDel(cidr string) error {
	l, a, err := testAddr(cidr)
	if err != nil {
		return err
	}
	return netlink.AddrDel(l, a)
}

func hasAddr(ip string) error {
	l, err := netlink.LinkByName(testIfName)
	if err != nil {
		return err
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if a.IP.String() == ip {
			return nil
		}
	}
	return errors.New(ip + " is gone")
}

// A MAC asked for an interface without one of its own (lo: all zeros)
// could never be put back by DEL, since the kernel takes no zero address:
// ADD refuses it with code 7 and leaves lo as it was.
func TestMACOnInterfaceWithoutMAC(t *testing.T) {
	sandbox.Require(t)
	const v = "1.0.0"
	c := newVethContainer(t, "tumac")
	before, _ := c.snapshot()
	conf := pluginConf(t, tuningConf(v, t.TempDir(), `,"prevResult":`+prevResultJSON(v, c.netns.Path(), before.MAC)))
	rt := &libcni.RuntimeConf{ContainerID: "maclo", NetNS: c.netns.Path(), IfName: "lo",
		CapabilityArgs: map[string]any{"mac": testMAC}}
	_, err := sandbox.Runtime(t).AddNetwork(ctx, conf, rt)
	var ce *cnitypes.Error
	if !errors.As(err, &ce) || ce.Code != 7 || !strings.Contains(ce.Msg, `"lo" has no MAC address of its own`) {
		t.Fatalf("ADD of a MAC on lo = %v, want code 7 saying lo has no MAC", err)
	}
	c.do("reading lo", func() error {
		l, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if mac := l.Attrs().HardwareAddr.String(); mac != "00:00:00:00:00:00" && mac != "" {
			return errors.New("lo's MAC became " + mac)
		}
		return nil
	})
}
