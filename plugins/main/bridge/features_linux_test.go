package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/pkg/sysctl"
	"cnisuite/test/sandbox"
)

// TestPortFeatures checks the port flags, promisc, MTU and IPv6 hardening an
// ADD programs.
func TestPortFeatures(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		check func(t *testing.T, br string, c *ctr)
	}{
		{"hairpin", `"hairpinMode":true`, func(t *testing.T, br string, c *ctr) {
			if pi := protinfo(t, c); !pi.Hairpin || pi.Isolated {
				t.Errorf("port flags = %s, want Hairpin only", pi.String())
			}
		}},
		{"isolation", `"portIsolation":true`, func(t *testing.T, br string, c *ctr) {
			if pi := protinfo(t, c); !pi.Isolated || pi.Hairpin {
				t.Errorf("port flags = %s, want Isolated only", pi.String())
			}
		}},
		{"promisc", `"promiscMode":true`, func(t *testing.T, br string, c *ctr) {
			if hostLink(t, br).Attrs().Promisc == 0 {
				t.Errorf("bridge %q is not promiscuous", br)
			}
		}},
		{"mtu", `"mtu":1400`, func(t *testing.T, br string, c *ctr) {
			if got := hostLink(t, br).Attrs().MTU; got != 1400 {
				t.Errorf("bridge MTU = %d, want 1400", got)
			}
			if got := hostLink(t, c.res.Interfaces[ifHost].Name).Attrs().MTU; got != 1400 {
				t.Errorf("host veth MTU = %d, want 1400", got)
			}
			if got := contLink(t, c).Attrs().MTU; got != 1400 {
				t.Errorf("container MTU = %d, want 1400", got)
			}
		}},
		{"ipv6_hardening", ``, func(t *testing.T, br string, c *ctr) {
			host := c.res.Interfaces[ifHost].Name
			for _, name := range []string{br, host} {
				if v, _ := sysctl.Get("net/ipv6/conf/" + name + "/accept_ra"); v != "0" {
					t.Errorf("accept_ra on %s = %q, want 0", name, v)
				}
			}
			// No link-local address on the port: nothing for each later
			// veth deletion to walk past in the host's IPv6 routes.
			if addrs, err := netlink.AddrList(hostLink(t, host), netlink.FAMILY_V6); err != nil || len(addrs) != 0 {
				t.Errorf("IPv6 addresses of host veth %s = %v, %v; want none", host, addrs, err)
			}
			if q := hostLink(t, host).Attrs().TxQLen; q != 1000 {
				t.Errorf("host veth txqueuelen = %d, want the kernel default 1000", q)
			}
			_ = c.ns.Do(func() error {
				if v, _ := sysctl.Get("net/ipv6/conf/eth0/accept_dad"); v != "0" {
					t.Errorf("container accept_dad = %q, want 0", v)
				}
				return nil
			})
		}},
		{"enabledad", `"enabledad":true`, func(t *testing.T, br string, c *ctr) {
			_ = c.ns.Do(func() error {
				for _, k := range []string{"accept_dad", "enhanced_dad"} {
					if v, _ := sysctl.Get("net/ipv6/conf/eth0/" + k); v != "1" {
						t.Errorf("container %s = %q, want 1", k, v)
					}
				}
				return nil
			})
		}},
		{"disable_container_interface", `"disableContainerInterface":true`, func(t *testing.T, br string, c *ctr) {
			if l := contLink(t, c); l.Attrs().Flags&1 != 0 {
				t.Errorf("container interface is up, want down")
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			br := fmt.Sprintf("bf%d", i)
			ipam := hostLocal(t, fmt.Sprintf("fd77:%x::/64", i))
			if tt.name == "disable_container_interface" {
				ipam = "{}"
			}
			n := newNet(t, "1.0.0", br, tt.extra, ipam)
			c := n.add("feat")
			tt.check(t, br, c)
		})
	}
}

// TestMACSources checks each source of the container MAC and their order:
// CNI_ARGS MAC < args.cni.mac < runtimeConfig.mac.
func TestMACSources(t *testing.T) {
	tests := []struct {
		name, extra, cniArgs, want string
	}{
		{"cni_args", ``, "0a:00:00:00:00:01", "0a:00:00:00:00:01"},
		{"args", `"args":{"cni":{"mac":"0a:00:00:00:00:02"}}`, "0a:00:00:00:00:01", "0a:00:00:00:00:02"},
		{"capability", `"capabilities":{"mac":true},"args":{"cni":{"mac":"0a:00:00:00:00:02"}}`, "0a:00:00:00:00:01", "0a:00:00:00:00:03"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := newNet(t, "1.1.0", fmt.Sprintf("bm%d", i), tt.extra, "{}")
			c := &ctr{id: "mac", ns: sandbox.NewNS(t)}
			c.rc = n.runtimeConf(c.id, c.ns)
			c.rc.Args = [][2]string{{"MAC", tt.cniArgs}}
			c.rc.CapabilityArgs = map[string]any{"mac": "0a:00:00:00:00:03"}
			res, err := n.tryAdd(c.rc)
			if err != nil {
				t.Fatalf("ADD = %v", err)
			}
			c.res = res
			if got := res.Interfaces[ifContainer].Mac; got != tt.want {
				t.Errorf("result MAC = %s, want %s", got, tt.want)
			}
			if got := contLink(t, c).Attrs().HardwareAddr.String(); got != tt.want {
				t.Errorf("container MAC = %s, want %s", got, tt.want)
			}
			n.del(c)
		})
	}
}

// TestVLAN programs an access VLAN and a trunk and reads the bridge VLAN
// table back. Kernels without bridge VLAN filtering skip it, saying so;
// `make vmtest` runs it on Debian 12's kernel, where it must not skip.
func TestVLAN(t *testing.T) {
	requireVLAN(t)
	n := newNet(t, "1.0.0", "bvlan", `"vlan":10,"vlanTrunk":[{"id":20},{"minID":30,"maxID":31}]`, "{}")
	c := n.add("vlan")
	want := "10 pvid untagged,20,30,31"
	if got := vlanTable(t, c.res.Interfaces[ifHost].Name); got != want {
		t.Errorf("port VLANs = %s, want %s", got, want)
	}
}

// vlanSupport tries to make a VLAN-filtering bridge.
func vlanSupport() error {
	name := fmt.Sprintf("bvprobe%d", os.Getpid()%1000)
	_, err := link.EnsureBridge(&netlink.Handle{}, link.BridgeOptions{Name: name, VlanFiltering: true})
	_ = link.DeleteLink(nil, name) // probe only
	return err
}

func protinfo(t *testing.T, c *ctr) netlink.Protinfo {
	t.Helper()
	pi, err := netlink.LinkGetProtinfo(hostLink(t, c.res.Interfaces[ifHost].Name))
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

func contLink(t *testing.T, c *ctr) netlink.Link {
	t.Helper()
	var l netlink.Link
	err := c.ns.Do(func() (err error) {
		l, err = netlink.LinkByName("eth0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestEnableDADFails: with enabledad, ADD fails when another node on the
// bridge already holds the container's IPv6 address, and leaves nothing.
func TestEnableDADFails(t *testing.T) {
	n := newNet(t, "1.0.0", "bdad", `"enabledad":true`, hostLocal(t, "fd99::/64"))
	if _, err := link.EnsureBridge(&netlink.Handle{}, link.BridgeOptions{Name: "bdad"}); err != nil {
		t.Fatal(err)
	}
	dup, _ := netlink.ParseAddr("fd99::2/64") // host-local's first address
	dup.Flags = 0x02                          // IFA_F_NODAD: the bridge owns it at once
	if err := netlink.AddrAdd(hostLink(t, "bdad"), dup); err != nil {
		t.Fatal(err)
	}
	c := &ctr{id: "dad", ns: sandbox.NewNS(t)}
	if _, err := n.tryAdd(n.runtimeConf(c.id, c.ns)); err == nil || !strings.Contains(err.Error(), "duplicate address") {
		t.Fatalf("ADD with a duplicate address = %v, want a DAD failure", err)
	}
	if ports := bridgePorts(t, "bdad"); len(ports) != 0 {
		t.Errorf("ports left after the failed ADD: %v", ports)
	}
}
