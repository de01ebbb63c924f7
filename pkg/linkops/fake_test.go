package linkops

import (
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestFakeRecordsAndApplies(t *testing.T) {
	f := NewFake(Attrs{Name: "eth0", MTU: 1500, TxQLen: 1000})
	l, err := f.Get("eth0")
	if err != nil {
		t.Fatal(err)
	}
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	f.Fail = map[string]error{"ip link set dev eth0 txqueuelen 7": errors.New("refused")}
	errs := []error{f.SetMTU(l, 1400), f.SetMAC(l, mac), f.SetPromisc(l, true), f.SetAllmulti(l, false), f.SetUp(l, true)}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTxQLen(l, 7); err == nil {
		t.Error("SetTxQLen(7) = nil, want the failure Fail names")
	}
	want := []string{
		"ip link set dev eth0 mtu 1400",
		"ip link set dev eth0 address 02:00:00:00:00:01",
		"ip link set dev eth0 promisc on",
		"ip link set dev eth0 allmulticast off",
		"ip link set dev eth0 up",
	}
	if got := f.Lines(); !slices.Equal(got, want) {
		t.Errorf("Lines() = %q, want %q", got, want)
	}
	got, _ := f.Get("eth0")
	if got.MTU != 1400 || got.MAC.String() != mac.String() || !got.Promisc || !got.Up || got.TxQLen != 1000 {
		t.Errorf("Get after the changes = %+v, want mtu 1400, the MAC, promisc, up, txqueuelen 1000", got)
	}
	if _, err := f.Get("eth1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(eth1) = %v, want ErrNotFound", err)
	}
}

func TestFakeAddrsByFamily(t *testing.T) {
	f := NewFake(Attrs{Name: "lo"})
	f.AddAddr("lo", netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(8, 32)}})
	f.AddAddr("lo", netlink.Addr{IPNet: &net.IPNet{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)}})
	l, _ := f.Get("lo")
	v6, err := f.Addrs(l, netlink.FAMILY_V6)
	if err != nil || len(v6) != 1 || !v6[0].IP.Equal(net.IPv6loopback) {
		t.Errorf("Addrs(v6) = %v, %v, want ::1 alone", v6, err)
	}
	if all, _ := f.Addrs(l, netlink.FAMILY_ALL); len(all) != 2 {
		t.Errorf("Addrs(all) = %v, want both", all)
	}
}
