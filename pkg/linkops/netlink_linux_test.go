package linkops

import (
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

// The tests of the netlink implementation run as root of a user
// namespace of their own (test/userns), as root or not.
func TestMain(m *testing.M) { userns.Main(m) }

// shown is what `ip -j -d link show dev eth0` prints of the link.
type shown struct {
	Address     string   `json:"address"`
	MTU         int      `json:"mtu"`
	TxQLen      int      `json:"txqlen"`
	Flags       []string `json:"flags"`
	Promiscuity int      `json:"promiscuity"`
}

// ipShow reads eth0 in n with the ip binary, a reader independent of the
// code under test.
func ipShow(t *testing.T, n *ns.NetNS) shown {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+n.Path(), "ip", "-j", "-d", "link", "show", "dev", "eth0").Output()
	var links []shown
	if err == nil {
		err = json.Unmarshal(out, &links)
	}
	if err != nil || len(links) != 1 {
		t.Fatalf("ip -j -d link show dev eth0: %v (%s)", err, out)
	}
	return links[0]
}

// vethNS is a fresh namespace with the veth eth0 (peer p0), and a Netlink
// acting there.
func vethNS(t *testing.T) (*ns.NetNS, Netlink) {
	t.Helper()
	n := userns.NewNS(t)
	h, err := netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", TxQLen: 1000}, PeerName: "p0"}); err != nil {
		t.Fatalf("ip link add eth0 type veth peer p0: %v", err)
	}
	return n, Netlink{H: h}
}

// TestNetlinkSetters: each setter makes the change ip then shows, Get
// reads back what ip shows, and the Fake, given the same calls, ends
// with the same attributes.
func TestNetlinkSetters(t *testing.T) {
	n, real := vethNS(t)
	l, err := real.Get("eth0")
	if err != nil {
		t.Fatal(err)
	}
	fake := NewFake(l)
	mac, _ := net.ParseMAC("02:00:0a:0b:0c:0d")
	calls := []struct {
		name string
		do   func(Links) error
		want func(s shown) bool
	}{
		{"mtu 1400", func(x Links) error { return x.SetMTU(l, 1400) }, func(s shown) bool { return s.MTU == 1400 }},
		{"address", func(x Links) error { return x.SetMAC(l, mac) }, func(s shown) bool { return s.Address == mac.String() }},
		{"txqueuelen 77", func(x Links) error { return x.SetTxQLen(l, 77) }, func(s shown) bool { return s.TxQLen == 77 }},
		{"promisc on", func(x Links) error { return x.SetPromisc(l, true) }, func(s shown) bool { return slices.Contains(s.Flags, "PROMISC") }},
		{"allmulticast on", func(x Links) error { return x.SetAllmulti(l, true) }, func(s shown) bool { return slices.Contains(s.Flags, "ALLMULTI") }},
		{"up", func(x Links) error { return x.SetUp(l, true) }, func(s shown) bool { return slices.Contains(s.Flags, "UP") }},
		{"promisc off", func(x Links) error { return x.SetPromisc(l, false) }, func(s shown) bool { return !slices.Contains(s.Flags, "PROMISC") }},
		{"allmulticast off", func(x Links) error { return x.SetAllmulti(l, false) }, func(s shown) bool { return !slices.Contains(s.Flags, "ALLMULTI") }},
		{"down", func(x Links) error { return x.SetUp(l, false) }, func(s shown) bool { return !slices.Contains(s.Flags, "UP") }},
		{"promisc on again", func(x Links) error { return x.SetPromisc(l, true) }, func(s shown) bool { return slices.Contains(s.Flags, "PROMISC") }},
	}
	for _, c := range calls {
		if err := c.do(real); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.do(fake); err != nil {
			t.Fatalf("fake %s: %v", c.name, err)
		}
		if s := ipShow(t, n); !c.want(s) {
			t.Errorf("after %s ip shows %+v", c.name, s)
		}
	}
	got, err := real.Get("eth0")
	if err != nil {
		t.Fatal(err)
	}
	s := ipShow(t, n)
	if got.MTU != s.MTU || got.MAC.String() != s.Address || got.TxQLen != s.TxQLen || !got.Promisc || got.Allmulti || got.Up {
		t.Errorf("Get() = %+v; ip shows %+v", got, s)
	}
	if f, _ := fake.Get("eth0"); f.MTU != got.MTU || f.MAC.String() != got.MAC.String() || f.TxQLen != got.TxQLen ||
		f.Promisc != got.Promisc || f.Allmulti != got.Allmulti || f.Up != got.Up {
		t.Errorf("the fake ends with %+v, the kernel with %+v", f, got)
	}
}

// TestNetlinkErrors: a missing link is ErrNotFound; what the kernel
// refuses comes back naming the value and the link.
func TestNetlinkErrors(t *testing.T) {
	n, real := vethNS(t)
	if _, err := real.Get("eth9"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"eth9"`) {
		t.Errorf(`Get("eth9") = %v, want ErrNotFound naming it`, err)
	}
	l, err := real.Get("eth0")
	if err != nil {
		t.Fatal(err)
	}
	before := ipShow(t, n)
	multicast, _ := net.ParseMAC("01:00:5e:00:00:01")
	gone := Attrs{Index: 9999, Name: "gone0"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{real.SetMTU(l, 1<<20), `setting mtu 1048576 on "eth0"`},
		{real.SetMAC(l, multicast), `setting mac 01:00:5e:00:00:01 on "eth0"`},
		{real.SetTxQLen(gone, 5), `setting txQLen 5 on "gone0"`},
		{real.SetPromisc(gone, true), `setting promisc true on "gone0"`},
		{real.SetAllmulti(gone, true), `setting allmulti true on "gone0"`},
		{real.SetUp(gone, true), `setting "gone0" up=true`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", tc.err, tc.want)
		}
	}
	if after := ipShow(t, n); after.MTU != before.MTU || after.Address != before.Address {
		t.Errorf("after the refusals ip shows %+v, before %+v", after, before)
	}
}

// TestNetlinkAddrs: Addrs lists the link's addresses of a family, and a
// Netlink without a handle acts in the calling thread's namespace.
func TestNetlinkAddrs(t *testing.T) {
	n, _ := vethNS(t)
	err := n.Do(func() error {
		here := Netlink{}
		l, err := here.Get("eth0")
		if err != nil {
			return err
		}
		for _, a := range []string{"10.7.0.2/24", "fd07::2/64"} {
			addr, _ := netlink.ParseAddr(a)
			addr.Flags = unix.IFA_F_NODAD
			if err := netlink.AddrAdd(device(l), addr); err != nil {
				return err
			}
		}
		v4, err := here.Addrs(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(v4) != 1 || v4[0].IPNet.String() != "10.7.0.2/24" {
			t.Errorf("Addrs(v4) = %v, want 10.7.0.2/24 alone", v4)
		}
		all, err := here.Addrs(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		var got []string
		for _, a := range all {
			got = append(got, a.IPNet.String())
		}
		if !slices.Contains(got, "10.7.0.2/24") || !slices.Contains(got, "fd07::2/64") {
			t.Errorf("Addrs(all) = %v, want both addresses", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
