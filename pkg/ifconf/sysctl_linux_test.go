package ifconf

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// DisableRA turns accept_ra off on the link it names, and leaves the other
// alone; a missing link is nothing to do.
func TestDisableRA(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		other := procValue(t, "net/ipv6/conf/dum1/accept_ra")
		if procValue(t, "net/ipv6/conf/dum0/accept_ra") == 0 {
			t.Fatal("accept_ra is 0 already: the test would prove nothing")
		}
		for _, name := range []string{"dum0", "dum0", "nosuch0"} {
			if err := DisableRA(name); err != nil {
				t.Errorf("DisableRA(%s) = %v", name, err)
			}
		}
		if got := procValue(t, "net/ipv6/conf/dum0/accept_ra"); got != 0 {
			t.Errorf("accept_ra of dum0 = %d, want 0", got)
		}
		if got := procValue(t, "net/ipv6/conf/dum1/accept_ra"); got != other {
			t.Errorf("accept_ra of dum1 = %d, want %d as before", got, other)
		}
	})
}

// SetIPv4Conf writes several settings in one request, as /proc/sys then
// shows them, and refuses a key that is no per-interface setting.
func TestSetIPv4Conf(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		l, err := netlink.LinkByName("dum0")
		if err != nil {
			t.Fatal(err)
		}
		if err := SetIPv4Conf(l.Attrs().Index, map[string]int{"arp_ignore": 2, "arp_announce": 1}); err != nil {
			t.Fatal(err)
		}
		if a, b := procValue(t, "net/ipv4/conf/dum0/arp_ignore"), procValue(t, "net/ipv4/conf/dum0/arp_announce"); a != 2 || b != 1 {
			t.Errorf("arp_ignore=%d arp_announce=%d, want 2 and 1", a, b)
		}
		err = SetIPv4Conf(l.Attrs().Index, map[string]int{"ip_forward": 1})
		if err == nil || !strings.Contains(err.Error(), "net.ipv4.conf.*.ip_forward: not a per-interface setting") {
			t.Errorf("SetIPv4Conf(ip_forward) = %v, want a refusal naming the key", err)
		}
		if err := SetIPv4Conf(9999, map[string]int{"arp_notify": 1}); err == nil {
			t.Errorf("SetIPv4Conf on a missing link = nil, want an error")
		}
	})
}

// ReadDevConf reads a link by name or index, and its Link; a missing link
// is an error naming it.
func TestReadDevConf(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		byName, err := ReadDevConf("dum1", 0)
		if err != nil {
			t.Fatal(err)
		}
		byIndex, err := ReadDevConf("", byName.Index)
		if err != nil || byIndex.Name != "dum1" {
			t.Fatalf("ReadDevConf(index %d) = %+v, %v; want dum1", byName.Index, byIndex, err)
		}
		l, err := byIndex.Link()
		if err != nil || l.Attrs().Name != "dum1" || l.Type() != "veth" {
			t.Errorf("Link() = %v, %v; want the veth dum1", l, err)
		}
		if _, ok := byName.IPv4("no_such_key"); ok {
			t.Errorf("IPv4(no_such_key) reported")
		}
		if _, ok := byName.IPv6("no_such_key"); ok {
			t.Errorf("IPv6(no_such_key) reported")
		}
		if _, err := ReadDevConf("nosuch0", 0); err == nil || !strings.Contains(err.Error(), "nosuch0") {
			t.Errorf("ReadDevConf(nosuch0) = %v, want an error naming it", err)
		}
		if _, err := ReadDevConf("", 9999); err == nil || !strings.Contains(err.Error(), "index 9999") {
			t.Errorf("ReadDevConf(index 9999) = %v, want an error naming it", err)
		}
	})
}

// SetUnlessEqual writes a sysctl that differs, leaves an equal one, and a
// missing one is no error.
func TestSetUnlessEqual(t *testing.T) {
	in := vethPairNS(t)
	in(t, func() {
		for _, v := range []string{"1", "1", "0"} {
			if err := SetUnlessEqual("net/ipv4/conf/dum0/arp_notify", v); err != nil {
				t.Fatal(err)
			}
			if got := procValue(t, "net/ipv4/conf/dum0/arp_notify"); got != int(v[0]-'0') {
				t.Errorf("arp_notify = %d after SetUnlessEqual(%s)", got, v)
			}
		}
		if err := SetUnlessEqual("net/ipv4/conf/nosuch0/arp_notify", "1"); err != nil {
			t.Errorf("SetUnlessEqual on a missing link = %v, want nil", err)
		}
		if err := SetUnlessEqual("net/ipv4/conf/dum0/arp_notify", "x"); err == nil {
			t.Errorf("SetUnlessEqual(arp_notify=x) = nil, want the kernel's refusal")
		}
	})
}

func TestIPv4Keys(t *testing.T) {
	for key, want := range map[string][2]bool{ // HasIPv4Conf, IPv4Plain
		"arp_notify": {true, true}, "rp_filter": {true, false}, "route_localnet": {true, false}, "ip_forward": {false, false},
	} {
		if HasIPv4Conf(key) != want[0] || IPv4Plain(key) != want[1] {
			t.Errorf("%s: HasIPv4Conf %v, IPv4Plain %v; want %v", key, HasIPv4Conf(key), IPv4Plain(key), want)
		}
	}
}
