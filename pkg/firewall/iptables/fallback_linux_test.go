package iptables

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/test/fwtest"
	"cnisuite/test/userns"
)

// TestEnsureFallsBackToRestore: user conditions are written with
// iptables-restore, the family without them over netlink; a namespace
// without table nat gets it over netlink (TestNetlinkMakesTableNAT shows
// it is what iptables-restore makes).
func TestEnsureFallsBackToRestore(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	t.Run("conditions", func(t *testing.T) {
		inNS(t, func() {
			primeNAT(t)
			b := New()
			r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ConditionsV4 = []string{"!", "-i", "cni0"} })
			if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if _, ok := loadJumps(family{v4: true}, fwtest.PortOwner); ok {
				t.Error("IPv4 (with conditions) was written over netlink, want iptables-restore")
			}
			if _, ok := loadJumps(family{v4: false}, fwtest.PortOwner); !ok {
				t.Error("IPv6 was not written over netlink")
			}
			if err := b.Check(ctx, fwtest.PortOwner, r); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	})
	t.Run("no_nat_table", func(t *testing.T) {
		inNS(t, func() {
			b := New()
			r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
			if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if _, ok := loadJumps(family{v4: true}, fwtest.PortOwner); !ok {
				t.Error("Ensure without table nat did not write over netlink")
			}
			other := fwtest.PortOwner
			other.ContainerID = "ctr2"
			if err := b.Ensure(ctx, other, r); err != nil {
				t.Fatalf("Ensure of a second owner: %v", err)
			}
			if _, ok := loadJumps(family{v4: true}, other); !ok {
				t.Error("Ensure of a second owner did not write over netlink")
			}
			for _, o := range []fwapi.Owner{fwtest.PortOwner, other} {
				if err := b.Check(ctx, o, r); err != nil {
					t.Errorf("Check(%s): %v", o, err)
				}
			}
		})
	})
}

// TestNetlinkDNATForwards: a connection to a mapped host port reaches the
// "container" address through the DNAT rule Ensure wrote over netlink
// (node-local traffic: the OUTPUT jump).
func TestNetlinkDNATForwards(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	inNS(t, func() {
		upLoWith(t, "10.88.0.2/32", "192.0.2.1/32")
		primeNAT(t)
		b := withWriter(&nft{}) // netlink alone
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV6, p.SNAT, p.Mappings = nil, false, p.Mappings[:1] // tcp 8080 → 80
		})
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		if got := exchange(t, "10.88.0.2:80", "192.0.2.1:8080"); got != "hello" {
			t.Errorf("192.0.2.1:8080 answered %q, want the listener on 10.88.0.2:80", got)
		}
	})
}

// TestConditionsBesideOwnAddresses: user conditions that carry a -s or a
// -d of their own (excluding a source range; kube-proxy's service range)
// combine with the source of the hairpin marks and a mapping's host
// address; iptables takes one of each per rule, and Ensure failed with
// "multiple -s flags". The conditions still decide which packets are
// mapped.
func TestConditionsBesideOwnAddresses(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	inNS(t, func() {
		upLoWith(t, "10.88.0.2/32", "192.0.2.1/32", "198.51.100.1/32")
		primeNAT(t)
		b := New()
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV6 = nil
			p.Mappings = []fwapi.PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.1")}}
			p.ConditionsV4 = []string{"!", "-s", "198.51.100.0/24", "!", "--dst", "10.96.0.0/12"}
		})
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); err != nil {
			t.Errorf("Check: %v", err)
		}
		ms, err := b.Mapped(ctx, fwtest.PortOwner)
		if err != nil || len(ms) != 1 || !ms[0].HostIP.Equal(net.ParseIP("192.0.2.1")) {
			t.Errorf("Mapped = %+v, %v; want tcp 8080 on 192.0.2.1", ms, err)
		}
		if got := exchange(t, "10.88.0.2:80", "192.0.2.1:8080"); got != "hello" {
			t.Errorf("192.0.2.1:8080 answered %q, want the listener on 10.88.0.2:80", got)
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("198.51.100.1")}, Timeout: 2 * time.Second}
		l, err := net.Listen("tcp4", "10.88.0.2:80")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if c, err := d.Dial("tcp4", "192.0.2.1:8080"); err == nil {
			c.Close()
			t.Errorf("a connection from 198.51.100.1, which the conditions exclude, was mapped")
		}
		if err := b.Remove(ctx, fwtest.PortOwner); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// TestOddInterfaceName: an owner whose interface name holds a quote, a
// backslash and a byte-order mark (all valid in a Linux interface name)
// gets the same tag on its jumps whether iptables-restore (user conditions)
// or the netlink writer writes them — the name as it is, as iptables-save
// shows it — and Check and Remove find them.
func TestOddInterfaceName(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	o := fwtest.PortOwner
	o.IfName = "e\"\ufeff\\0"
	for name, conds := range map[string][]string{"restore": {"!", "-i", "cni0"}, "netlink": nil} {
		t.Run(name, func(t *testing.T) {
			inNS(t, func() {
				primeNAT(t)
				b := New()
				r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6, p.ConditionsV4 = nil, conds })
				if err := b.Ensure(ctx, o, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				if err := b.Check(ctx, o, r); err != nil {
					t.Errorf("Check: %v", err)
				}
				out, err := exec.Command("iptables-save", "-t", "nat").Output()
				if want := "--comment " + natchain.Quote("cnisuite "+o.String()) + " -j"; err != nil || !strings.Contains(string(out), want) {
					t.Errorf("iptables-save does not name the owner as %s (%v):\n%s", want, err, out)
				}
				if err := b.Remove(ctx, o); err != nil {
					t.Fatalf("Remove: %v", err)
				}
				fwtest.AssertNoOwnerRules(t)
			})
		})
	}
}

// upLoWith sets lo up and gives it the addresses.
func upLoWith(t *testing.T, addrs ...string) {
	t.Helper()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if err := netlink.AddrAdd(lo, &netlink.Addr{IPNet: fwtest.CIDR(t, a)}); err != nil {
			t.Fatalf("adding %s to lo: %v", a, err)
		}
	}
}

// exchange listens on addr, connects to via and returns what the listener
// read; all on the calling goroutine (its thread is in the namespace).
func exchange(t *testing.T, addr, via string) string {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.DialTimeout("tcp4", via, 2*time.Second)
	if err != nil {
		t.Fatalf("connecting to %s: %v", via, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	l.(*net.TCPListener).SetDeadline(time.Now().Add(2 * time.Second))
	s, err := l.Accept()
	if err != nil {
		t.Fatalf("accepting on %s: %v", addr, err)
	}
	defer s.Close()
	s.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, _ := io.ReadAll(s)
	return string(got)
}

// TestMappedOverNetlink: the host ports read back over netlink are those
// `iptables -S` shows, for each shape of DNAT rule: tcp, udp and sctp, a
// host address as -d and, beside user conditions, as an iprange match.
func TestMappedOverNetlink(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	for name, conds := range map[string][]string{"plain": nil, "conditions": {"!", "-d", "10.96.0.0/12"}} {
		t.Run(name, func(t *testing.T) {
			inNS(t, func() {
				r := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
					p.ConditionsV4 = conds
					p.Mappings = append(p.Mappings,
						fwapi.PortMapping{HostPort: 9090, ContainerPort: 90, Protocol: "sctp"},
						fwapi.PortMapping{HostPort: 8081, ContainerPort: 81, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.10")},
						fwapi.PortMapping{HostPort: 8082, ContainerPort: 82, Protocol: "udp", HostIP: net.ParseIP("2001:db8::10")},
						fwapi.PortMapping{HostPort: 7000, ContainerPort: 7000, Protocol: "udp", Range: 11},
						fwapi.PortMapping{HostPort: 6000, ContainerPort: 6000, Protocol: "sctp", Range: 3, HostIP: net.ParseIP("192.0.2.10")})
				})
				if err := New().Ensure(ctx, fwtest.PortOwner, r); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				text := fmt.Sprint(withWriter(newLegacy("")).Mapped(ctx, fwtest.PortOwner))
				nl := fmt.Sprint(withWriter(&nft{}).Mapped(ctx, fwtest.PortOwner))
				if nl != text {
					t.Errorf("Mapped over netlink = %s\nwant (iptables -S) %s", nl, text)
				}
				for _, want := range []string{"{9090 0 sctp <nil> 0}", "{8081 0 tcp 192.0.2.10 0}", "{8082 0 udp 2001:db8::10 0}", "{7000 0 udp <nil> 11}", "{6000 0 sctp 192.0.2.10 3}"} {
					if !strings.Contains(nl, want) {
						t.Errorf("Mapped = %s, want %s among them", nl, want)
					}
				}
			})
		})
	}
}
