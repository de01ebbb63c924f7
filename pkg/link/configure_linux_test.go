package link

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/types"
)

// attachment is a result for the interfaces named: addresses "cidr[ gw]"
// on interface 0, routes "dst[ via gw][ table t][ metric m]".
func attachment(t *testing.T, ifaces []string, addrs, routes []string) *types.Result {
	t.Helper()
	res := &types.Result{}
	for _, name := range ifaces {
		res.Interfaces = append(res.Interfaces, &types.Interface{Name: name})
	}
	for _, a := range addrs {
		f := strings.Fields(a)
		ip, n, err := net.ParseCIDR(f[0])
		if err != nil {
			t.Fatal(err)
		}
		c := &types.IPConfig{Interface: types.Ptr(0), Address: net.IPNet{IP: ip, Mask: n.Mask}}
		if len(f) > 1 {
			c.Gateway = net.ParseIP(f[1])
		}
		res.IPs = append(res.IPs, c)
	}
	for _, r := range routes {
		res.Routes = append(res.Routes, parseRoute(t, r))
	}
	return res
}

func parseRoute(t *testing.T, s string) *types.Route {
	t.Helper()
	f := strings.Fields(s)
	_, dst, err := net.ParseCIDR(f[0])
	if err != nil {
		t.Fatal(err)
	}
	r := &types.Route{Dst: *dst}
	for i := 1; i+1 < len(f); i += 2 {
		switch f[i] {
		case "via":
			r.GW = net.ParseIP(f[i+1])
		case "table":
			r.Table = types.Ptr(atoi(t, f[i+1]))
		case "metric":
			r.Priority = atoi(t, f[i+1])
		}
	}
	return r
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var v int
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is no number", s)
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// configured is a namespace whose dum0 ConfigureIface gave res, with its
// peer dum1 up (so dum0 has a carrier).
func configured(t *testing.T, res *types.Result, o ConfigureOptions) (testNS, error) {
	t.Helper()
	n := newNS(t)
	n.veth(t, "dum0", "dum1")
	if err := n.h.LinkSetUp(n.link(t, "dum1")); err != nil {
		t.Fatal(err)
	}
	err := n.Do(func() error { return ConfigureIface(context.Background(), "dum0", res, o) })
	return n, err
}

// ConfigureIface gives the interface its addresses and routes and sets it
// up; an interface with IPv4 only has IPv6 off, one with IPv6 gets its
// addresses without DAD unless asked for, and arp_notify when asked for.
func TestConfigureIface(t *testing.T) {
	tests := []struct {
		name    string
		addrs   []string
		routes  []string
		opts    ConfigureOptions
		want    string            // ip addr show dev dum0
		routes4 []string          // ip -4 route show table all
		routes6 []string          // ip -6 route show table all
		sysctls map[string]string // under /proc/sys/net/
	}{
		{
			name:   "ipv4_only",
			addrs:  []string{"10.1.0.2/24 10.1.0.1"},
			routes: []string{"0.0.0.0/0", "10.9.0.0/16 via 10.1.0.9 table 100 metric 50"},
			want:   "10.1.0.2/24",
			routes4: []string{"default via 10.1.0.1 dev dum0", "10.1.0.0/24 dev dum0",
				"10.9.0.0/16 via 10.1.0.9 dev dum0 table 100 metric 50"},
			sysctls: map[string]string{"ipv6/conf/dum0/disable_ipv6": "1", "ipv4/conf/dum0/arp_notify": "0"},
		},
		{
			name:    "ipv6_without_dad",
			addrs:   []string{"fd00::2/64 fd00::1"},
			routes:  []string{"::/0"},
			want:    "fd00::2/64",
			routes6: []string{"fd00::/64 dev dum0", "default via fd00::1 dev dum0"},
			sysctls: map[string]string{"ipv6/conf/dum0/disable_ipv6": "0", "ipv6/conf/dum0/accept_dad": "0",
				"ipv6/conf/dum0/keep_addr_on_down": "1", "ipv6/conf/lo/disable_ipv6": "0"},
		},
		{
			name:    "dual_stack_arp_notify",
			addrs:   []string{"10.1.0.2/24 10.1.0.1", "fd00::2/64"},
			routes:  []string{"0.0.0.0/0"},
			opts:    ConfigureOptions{ArpNotify: true},
			want:    "10.1.0.2/24 fd00::2/64",
			routes4: []string{"default via 10.1.0.1 dev dum0", "10.1.0.0/24 dev dum0"},
			sysctls: map[string]string{"ipv6/conf/dum0/disable_ipv6": "0", "ipv4/conf/dum0/arp_notify": "1"},
		},
		{
			name:    "ipv6_with_dad",
			addrs:   []string{"fd00::2/64"},
			opts:    ConfigureOptions{DAD: true},
			want:    "fd00::2/64",
			sysctls: map[string]string{"ipv6/conf/dum0/accept_dad": "1", "ipv6/conf/dum0/enhanced_dad": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := attachment(t, []string{"dum0"}, tt.addrs, tt.routes)
			n, err := configured(t, res, tt.opts)
			if err != nil {
				t.Fatalf("ConfigureIface() = %v", err)
			}
			got := mustShow(t, n.NetNS, "dum0")
			if !got.up() || sorted(got.addrs()) != sorted(tt.want) {
				t.Errorf("ip addr show dev dum0: %v %s, want UP and %s", got.Flags, got.addrs(), tt.want)
			}
			for _, a := range got.AddrInfo {
				if a.Tentative && !strings.HasPrefix(a.Local, "fe80:") { // waited for: the addresses of res
					t.Errorf("%s/%d is still tentative when ConfigureIface returns", a.Local, a.Prefixlen)
				}
			}
			for fam, want := range map[string][]string{"-4": tt.routes4, "-6": tt.routes6} {
				if r := routes(t, n.NetNS, fam); want != nil && !sameSet(r, want) {
					t.Errorf("ip %s route show table all:\n%s\nwant\n%s", fam, strings.Join(r, "\n"), strings.Join(want, "\n"))
				}
			}
			for key, want := range tt.sysctls {
				if v := netFile(t, n, "proc/sys/net/"+key); v != want {
					t.Errorf("%s = %s, want %s", key, v, want)
				}
			}
			if err := n.Do(func() error { return VerifyIface("dum0", res) }); err != nil {
				t.Errorf("VerifyIface after ConfigureIface = %v", err)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// ConfigureIface fails, naming what is wrong, on a missing interface, an
// address of an interface index the result does not have, a route the
// kernel refuses, and DAD that does not end in time.
func TestConfigureIfaceErrors(t *testing.T) {
	bad := attachment(t, []string{"dum0"}, []string{"10.1.0.2/24"}, nil)
	bad.IPs[0].Interface = types.Ptr(3)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ifname  string
		res     *types.Result
		peerUp  bool
		ctx     context.Context
		opts    ConfigureOptions
		wantErr error
		msg     string
	}{
		{name: "missing_interface", ifname: "nosuch0", res: attachment(t, nil, nil, nil), msg: `"nosuch0"`},
		{name: "bad_interface_index", ifname: "dum0", res: bad, msg: "invalid interface index 3"},
		{name: "unreachable_gateway", ifname: "dum0", peerUp: true,
			res: attachment(t, []string{"dum0"}, []string{"10.1.0.2/24"}, []string{"10.9.0.0/16 via 10.7.0.1"}),
			msg: "adding route 10.9.0.0/16 via 10.7.0.1"},
		{name: "dad_never_ends", ifname: "dum0", opts: ConfigureOptions{DAD: true, DADTimeout: 50 * time.Millisecond},
			res: attachment(t, []string{"dum0"}, []string{"fd00::2/64"}, nil), wantErr: ErrDADFailed},
		{name: "dad_cancelled", ifname: "dum0", ctx: cancelled, opts: ConfigureOptions{DAD: true},
			res: attachment(t, []string{"dum0"}, []string{"fd00::2/64"}, nil), wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNS(t)
			n.veth(t, "dum0", "dum1")
			if tt.peerUp {
				if err := n.h.LinkSetUp(n.link(t, "dum1")); err != nil {
					t.Fatal(err)
				}
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			err := n.Do(func() error { return ConfigureIface(ctx, tt.ifname, tt.res, tt.opts) })
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("ConfigureIface() = %v, want an error wrapping %v, saying %q", err, tt.wantErr, tt.msg)
			}
		})
	}
}

// RouteFor takes the gateway of the route's family when the route names
// none, and the route's table, scope, metric, MTU and advmss.
func TestRouteFor(t *testing.T) {
	gws := map[int]net.IP{netlink.FAMILY_V4: net.ParseIP("10.1.0.1"), netlink.FAMILY_V6: net.ParseIP("fd00::1")}
	r := parseRoute(t, "10.9.0.0/16 table 7 metric 5")
	r.Scope, r.MTU, r.AdvMSS = types.Ptr(253), 1400, 1360
	got := RouteFor(4, r, gws)
	if got.LinkIndex != 4 || !got.Gw.Equal(gws[netlink.FAMILY_V4]) || got.Table != 7 || got.Priority != 5 ||
		got.Scope != netlink.SCOPE_LINK || got.MTU != 1400 || got.AdvMSS != 1360 || got.Dst.String() != "10.9.0.0/16" {
		t.Errorf("RouteFor() = %+v", got)
	}
	if got := RouteFor(4, parseRoute(t, "fd09::/64 via fd00::9"), gws); !got.Gw.Equal(net.ParseIP("fd00::9")) {
		t.Errorf("RouteFor() of a route with its own gateway took %v", got.Gw)
	}
}
