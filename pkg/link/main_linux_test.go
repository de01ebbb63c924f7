package link

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with a network
// namespace of its own (test/userns): as root or not, they never see the
// machine's links.
func TestMain(m *testing.M) { userns.Main(m) }

// testNS is a fresh network namespace and a netlink handle acting in it.
type testNS struct {
	*ns.NetNS
	h *netlink.Handle
}

func newNS(t *testing.T) testNS {
	t.Helper()
	n := userns.NewNS(t)
	h, err := netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink socket in %s: %v", n.Path(), err)
	}
	t.Cleanup(h.Close)
	return testNS{n, h}
}

// do runs fn inside the namespace, failing the test on its error.
func (n testNS) do(t *testing.T, fn func() error) {
	t.Helper()
	if err := n.Do(fn); err != nil {
		t.Fatal(err)
	}
}

// veth makes the veth pair name/peer in the namespace.
func (n testNS) veth(t *testing.T, name, peer string) netlink.Link {
	t.Helper()
	if err := n.h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatalf("ip link add %s type veth peer name %s: %v", name, peer, err)
	}
	return n.link(t, name)
}

// bridge makes the bridge name in the namespace.
func (n testNS) bridge(t *testing.T, name string) netlink.Link {
	t.Helper()
	if err := n.h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatalf("ip link add %s type bridge: %v", name, err)
	}
	return n.link(t, name)
}

func (n testNS) link(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := n.h.LinkByName(name)
	if err != nil {
		t.Fatalf("ip link show %s: %v", name, err)
	}
	return l
}

// ipLink is what `ip -j -d link show` and `ip -j addr show` print of a link.
type ipLink struct {
	Name        string   `json:"ifname"`
	Flags       []string `json:"flags"`
	MTU         int      `json:"mtu"`
	Master      string   `json:"master"`
	Address     string   `json:"address"`
	Promiscuity int      `json:"promiscuity"`
	AddrGenMode string   `json:"inet6_addr_gen_mode"`
	LinkInfo    struct {
		Kind string `json:"info_kind"`
		Data struct {
			VlanFiltering int `json:"vlan_filtering"`
		} `json:"info_data"`
		SlaveData struct {
			State    string `json:"state"`
			Hairpin  bool   `json:"hairpin"`
			Isolated bool   `json:"isolated"`
		} `json:"info_slave_data"`
	} `json:"linkinfo"`
	AddrInfo []ipAddr `json:"addr_info"`
}

type ipAddr struct {
	Local     string `json:"local"`
	Prefixlen int    `json:"prefixlen"`
	NoDAD     bool   `json:"nodad"`
	Tentative bool   `json:"tentative"`
}

// up reports whether ip shows the link administratively up.
func (l ipLink) up() bool {
	for _, f := range l.Flags {
		if f == "UP" {
			return true
		}
	}
	return false
}

// addrs lists the link's addresses as ip prints them, link-local ones left out.
func (l ipLink) addrs() string {
	var out []string
	for _, a := range l.AddrInfo {
		if !strings.HasPrefix(a.Local, "fe80:") {
			out = append(out, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
		}
	}
	return strings.Join(out, " ")
}

// ip runs `ip -j args...` inside the namespace (the tests' own when n is
// nil) and decodes what it prints into out; ok is false when ip fails (a
// missing device).
func ip(t *testing.T, n *ns.NetNS, out any, args ...string) (ok bool) {
	t.Helper()
	run := func() error {
		b, err := exec.Command("ip", append([]string{"-j"}, args...)...).Output()
		if err != nil {
			return err
		}
		return json.Unmarshal(b, out)
	}
	var err error
	if n == nil {
		err = run()
	} else {
		err = n.Do(run)
	}
	if _, failed := err.(*exec.ExitError); failed {
		return false
	}
	if err != nil {
		t.Fatalf("ip -j %s: %v", strings.Join(args, " "), err)
	}
	return true
}

// show returns what `ip -d link show dev name` and `ip addr show dev
// name` print in n; ok is false
// when there is no such link.
func show(t *testing.T, n *ns.NetNS, name string) (l ipLink, ok bool) {
	t.Helper()
	var links, addrs []ipLink
	if !ip(t, n, &links, "-d", "link", "show", "dev", name) || len(links) != 1 ||
		!ip(t, n, &addrs, "addr", "show", "dev", name) || len(addrs) != 1 {
		return ipLink{}, false
	}
	links[0].AddrInfo = addrs[0].AddrInfo
	return links[0], true
}

// mustShow is show for a link that must exist.
func mustShow(t *testing.T, n *ns.NetNS, name string) ipLink {
	t.Helper()
	l, ok := show(t, n, name)
	if !ok {
		t.Fatalf("ip link show %s: no such link", name)
	}
	return l
}

// ipRoute is what `ip -j route show table all` prints of a route.
type ipRoute struct {
	Dst     string `json:"dst"`
	Gateway string `json:"gateway"`
	Dev     string `json:"dev"`
	Table   string `json:"table"`
	Metric  int    `json:"metric"`
}

// routes lists n's routes of the family ("-4" or "-6") in every table but
// local, one "dst [via gw] dev d [table t] [metric m]" string each.
func routes(t *testing.T, n *ns.NetNS, family string) []string {
	t.Helper()
	var rs []ipRoute
	if !ip(t, n, &rs, family, "route", "show", "table", "all") {
		t.Fatalf("ip %s route show table all failed", family)
	}
	var out []string
	for _, r := range rs {
		if r.Table == "local" || strings.HasPrefix(r.Dst, "fe80::") || r.Dst == "multicast ff00::/8" {
			continue
		}
		s := r.Dst
		if r.Gateway != "" {
			s += " via " + r.Gateway
		}
		s += " dev " + r.Dev
		if r.Table != "" && r.Table != "main" {
			s += " table " + r.Table
		}
		if r.Metric != 0 && family == "-4" {
			s += fmt.Sprintf(" metric %d", r.Metric)
		}
		out = append(out, s)
	}
	return out
}

// netFile reads a file of the namespace's /proc/sys/net/ or, through a
// sysfs mounted for it, /sys/class/net/ (path starts with "sys/" or
// "proc/"), trimmed.
func netFile(t *testing.T, n testNS, path string) string {
	t.Helper()
	var b []byte
	n.do(t, func() error {
		root, rel := "/", path
		if after, ok := strings.CutPrefix(path, "sys/"); ok {
			rel = after
			// A sysfs shows the network namespace of whoever mounts it.
			root = t.TempDir()
			if err := unix.Mount("sysfs", root, "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mounting a sysfs of %s: %w", n.Path(), err)
			}
			defer unix.Unmount(root, unix.MNT_DETACH)
		}
		var err error
		b, err = os.ReadFile(filepath.Join(root, rel))
		return err
	})
	return strings.TrimSpace(string(b))
}
