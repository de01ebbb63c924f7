package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/ipmath"
	"cnisuite/pkg/version"
	"cnisuite/test/sandbox"
)

// families of the layer-3 matrix: the subnets of each container's ranges.
var families = []struct {
	name    string
	subnets func(i, j int) []string
}{
	{"ipv4", func(i, j int) []string { return []string{fmt.Sprintf("10.%d.%d.0/24", 100+i, j)} }},
	{"ipv6", func(i, j int) []string { return []string{fmt.Sprintf("fd%02x:%x::/64", i, j)} }},
	{"dual", func(i, j int) []string {
		return []string{fmt.Sprintf("10.%d.%d.0/24", 100+i, j), fmt.Sprintf("fd%02x:%x::/64", i, j)}
	}},
	{"two_ranges", func(i, j int) []string {
		return []string{fmt.Sprintf("10.%d.%d.0/24", 100+i, j), fmt.Sprintf("10.%d.%d.0/24", 100+i, 100+j)}
	}},
}

// TestLayer3 attaches two containers at every spec version and address
// family mix: they reach each other and the gateway; CHECK passes; DEL
// leaves no port; the bridge MAC stays put as ports come and go. Mixes a
// version cannot express are refused up front.
func TestLayer3(t *testing.T) {
	for i, v := range version.All {
		for j, fam := range families {
			t.Run(v+"/"+fam.name, func(t *testing.T) {
				t.Parallel()
				br := fmt.Sprintf("b%s%d", strings.ReplaceAll(v, ".", ""), j)
				subnets := fam.subnets(i, j)
				n := newNet(t, v, br, `"isGateway":true`, hostLocal(t, subnets...))
				if v < "0.3.0" && fam.name == "two_ranges" {
					wantRefused(t, n)
					return
				}
				a := n.add("l3-a")
				brMAC := hostLink(t, br).Attrs().HardwareAddr.String()
				b := n.add("l3-b")
				for _, s := range subnets {
					fam := 4
					if strings.Contains(s, ":") {
						fam = 6
					}
					if err := reach(a.ns, b.ns, b.addr(fam)); err != nil {
						t.Errorf("a → b (%v): %v", b.addr(fam), err)
					}
					gw := firstHostOf(t, s)
					if err := reach(b.ns, nil, gw); err != nil {
						t.Errorf("b → gateway %v: %v", gw, err)
					}
				}
				if version.AtLeast(v, "0.4.0") {
					if err := n.check(a); err != nil {
						t.Errorf("CHECK after ADD = %v", err)
					}
				}
				n.del(a)
				n.del(b)
				if got := hostLink(t, br).Attrs().HardwareAddr.String(); got != brMAC {
					t.Errorf("bridge MAC moved from %s to %s as ports came and went", brMAC, got)
				}
				if ports := bridgePorts(t, br); len(ports) != 0 {
					t.Errorf("ports left after DEL: %v", ports)
				}
			})
		}
	}
}

func firstHostOf(t *testing.T, cidr string) net.IP {
	t.Helper()
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return ipmath.FirstHost(*n)
}

// wantRefused checks that ADD fails with code 1 and creates nothing.
func wantRefused(t *testing.T, n *testNet) {
	t.Helper()
	_, err := n.tryAdd(n.runtimeConf("refused", sandbox.NewNS(t)))
	var e *types.Error
	if !errors.As(err, &e) || e.Code != 1 {
		t.Fatalf("ADD = %v, want error code 1", err)
	}
	if _, lerr := netlinkLinkByName(n.bridge); lerr == nil {
		t.Errorf("bridge %q was created by a refused ADD", n.bridge)
	}
}
