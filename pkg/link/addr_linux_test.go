package link

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func cidrs(t *testing.T, list string) []*net.IPNet {
	t.Helper()
	var out []*net.IPNet
	for _, s := range strings.Fields(list) {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		out = append(out, n)
	}
	return out
}

// EnsureAddrs leaves the link with the addresses asked for: equal ones
// kept, a conflicting one (any other IPv4 address, an IPv6 one of an
// overlapping subnet) refused or, forced, replaced; IPv6 ones without DAD.
func TestEnsureAddrs(t *testing.T) {
	tests := []struct {
		name    string
		have    string // on the link first (IPv6 ones nodad)
		want    string
		force   bool
		wantErr error
		after   string // what ip shows then
	}{
		{name: "empty", want: "10.1.0.1/24 fd00::1/64", after: "10.1.0.1/24 fd00::1/64"},
		{name: "equal_kept", have: "10.1.0.1/24", want: "10.1.0.1/24", after: "10.1.0.1/24"},
		{name: "other_ipv4_refused", have: "10.2.0.1/24", want: "10.1.0.1/24", wantErr: ErrAddressConflict, after: "10.2.0.1/24"},
		{name: "other_ipv4_forced", have: "10.2.0.1/24", want: "10.1.0.1/24", force: true, after: "10.1.0.1/24"},
		{name: "same_ip_other_prefix_forced", have: "10.1.0.1/16", want: "10.1.0.1/24", force: true, after: "10.1.0.1/24"},
		{name: "ipv6_other_subnet_kept", have: "fd01::1/64", want: "fd00::1/64", after: "fd00::1/64 fd01::1/64"},
		{name: "ipv6_overlap_refused", have: "fd00::2/64", want: "fd00::1/64", wantErr: ErrAddressConflict, after: "fd00::2/64"},
		{name: "ipv6_overlap_forced", have: "fd00::2/64", want: "fd00::1/64", force: true, after: "fd00::1/64"},
		{name: "ipv6_beside_ipv4", have: "10.2.0.1/24", want: "fd00::1/64", after: "10.2.0.1/24 fd00::1/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNS(t)
			l := n.veth(t, "dum0", "dum1")
			for _, a := range cidrs(t, tt.have) {
				if err := n.h.AddrAdd(l, &netlink.Addr{IPNet: a, Flags: unix.IFA_F_NODAD}); err != nil {
					t.Fatal(err)
				}
			}
			err := n.Do(func() error { return EnsureAddrs(n.h, l, cidrs(t, tt.want), tt.force) })
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("EnsureAddrs() = %v, want %v", err, tt.wantErr)
			}
			got := mustShow(t, n.NetNS, "dum0")
			if sorted(got.addrs()) != sorted(tt.after) {
				t.Errorf("ip addr show dev dum0: %s, want %s", got.addrs(), tt.after)
			}
			for _, a := range got.AddrInfo {
				if strings.Contains(a.Local, ":") && !strings.HasPrefix(a.Local, "fe80:") && !a.NoDAD {
					t.Errorf("%s/%d added with DAD", a.Local, a.Prefixlen)
				}
			}
		})
	}
}

// The link-local address a veth gets when it comes up never conflicts.
func TestEnsureAddrsLinkLocal(t *testing.T) {
	n := newNS(t)
	l := n.veth(t, "dum0", "dum1")
	if err := n.h.AddrAdd(l, &netlink.Addr{IPNet: cidrs(t, "fe80::99/64")[0], Flags: unix.IFA_F_NODAD}); err != nil {
		t.Fatal(err)
	}
	err := n.Do(func() error { return EnsureAddrs(n.h, l, cidrs(t, "fe80::1/64"), false) })
	if err != nil {
		t.Fatalf("EnsureAddrs(fe80::1/64) beside fe80::99/64 = %v", err)
	}
	var got []string
	for _, a := range mustShow(t, n.NetNS, "dum0").AddrInfo {
		got = append(got, a.Local)
	}
	if sorted(strings.Join(got, " ")) != "fe80::1 fe80::99" {
		t.Errorf("ip addr show dev dum0: %v, want fe80::1 and fe80::99", got)
	}
}

// sorted orders a space-separated list.
func sorted(list string) string {
	f := strings.Fields(list)
	slices.Sort(f)
	return strings.Join(f, " ")
}
