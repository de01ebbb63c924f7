package main

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/linkops"
)

// TestStepsOnFakeLo runs ADD's, CHECK's and DEL's link steps against a
// fake lo, without root.
func TestStepsOnFakeLo(t *testing.T) {
	links := linkops.NewFake(linkops.Attrs{Name: "lo", MTU: 65536})
	links.AddAddr("lo", netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(8, 32)}})
	if err := checkUp(links, "/run/netns/x"); err == nil || !strings.Contains(err.Error(), "lo in /run/netns/x is down") {
		t.Errorf("CHECK before ADD = %v, want lo reported down", err)
	}
	addrs, err := setUp(links)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	res := loopbackResult("/run/netns/x", addrs)
	if len(res.IPs) != 1 || res.IPs[0].Address.String() != "127.0.0.1/8" {
		t.Errorf("ADD result IPs = %v, want 127.0.0.1/8", res.IPs)
	}
	if err := checkUp(links, "/run/netns/x"); err != nil {
		t.Errorf("CHECK after ADD = %v, want nil", err)
	}
	if err := setDown(links); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	want := []string{"ip link set dev lo up", "ip link set dev lo down"}
	if got := links.Lines(); !slices.Equal(got, want) {
		t.Errorf("link changes = %q, want %q", got, want)
	}
	if _, err := setUp(linkops.NewFake()); err == nil || !strings.Contains(err.Error(), "find lo") {
		t.Errorf("ADD without lo = %v, want 'find lo'", err)
	}
}
