package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/fuzz/protocol"
	"cnisuite/test/sandbox"
)

// makeUplink makes the test's "node" an uplink: a veth pair of the given MTU,
// its node end with 192.0.2.1/24 and the node's default route, its other
// end in a "LAN" namespace (192.0.2.2/24) that routes 10.0.0.0/8 back.
func makeUplink(t *testing.T, name string, mtu int) *ns.NetNS {
	t.Helper()
	lan := sandbox.NewNS(t)
	sandbox.RemoveLinkAtEnd(t, name)
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: "lan0", PeerNamespace: netlink.NsFd(int(lan.Fd()))}
	if err := netlink.LinkAdd(v); err != nil {
		t.Fatal(err)
	}
	mustAddrUp(t, name, "192.0.2.1/24")
	l := hostLink(t, name)
	def := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP("192.0.2.2")}
	if err := netlink.RouteAdd(def); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.RouteDel(def) })
	err := lan.Do(func() error {
		p, err := netlink.LinkByName("lan0")
		if err == nil {
			err = netlink.LinkSetMTU(p, mtu)
		}
		if err == nil {
			mustAddrUp(t, "lan0", "192.0.2.2/24")
			_, dst, _ := net.ParseCIDR("10.0.0.0/8")
			err = netlink.RouteAdd(&netlink.Route{LinkIndex: p.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.0.2.1")})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return lan
}

func mustAddrUp(t *testing.T, name, cidr string) {
	t.Helper()
	mustAddr(t, name, cidr)
	if err := netlink.LinkSetUp(hostLinkOrIn(t, name)); err != nil {
		t.Fatal(err)
	}
}

// hostLinkOrIn reads a link of the calling thread's namespace.
func hostLinkOrIn(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// With mtuFromUplink and no mtu, the bridge and both veth ends take the
// MTU of the default route's interface, the 1.1.0 result says so for every
// interface, and a packet of nearly that size crosses the uplink with DF
// set. Before, a 9000-byte uplink gave the pod 1500 and a 1400-byte one
// gave it 1500 too (large transfers stalled).
func TestMTUFromUplink(t *testing.T) {
	for _, mtu := range []int{9000, 1400} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			lan := makeUplink(t, "upl0", mtu)
			br := fmt.Sprintf("brmtu%d", mtu)
			n := newNet(t, "1.1.0", br, `"isDefaultGateway":true,"mtuFromUplink":true`, hostLocal(t, "10.78.0.0/24"))
			c := n.add("pod")
			for i, iface := range c.res.Interfaces {
				if iface.Mtu != mtu {
					t.Errorf("result interface %d (%s) mtu = %d, want %d", i, iface.Name, iface.Mtu, mtu)
				}
			}
			// The result, encoded again as the plugin prints it, against the
			// result schema.
			if raw, err := c.res.Encode("1.1.0"); err != nil {
				t.Error(err)
			} else if err := protocol.ValidateResult(raw, "1.1.0"); err != nil {
				t.Errorf("result %s: %v", raw, err)
			}
			if got := hostLink(t, br).Attrs().MTU; got != mtu {
				t.Errorf("bridge MTU = %d, want %d", got, mtu)
			}
			if got := contLink(t, c).Attrs().MTU; got != mtu {
				t.Errorf("pod MTU = %d, want %d", got, mtu)
			}
			if err := n.check(c); err != nil {
				t.Errorf("CHECK = %v", err)
			}
			// IPv4 + ICMP headers take 28 bytes.
			out, err := exec.Command("nsenter", "--net="+c.ns.Path(), "ping", "-n", "-c", "1", "-W", "3", "-M", "do", "-s", fmt.Sprint(mtu-128), "192.0.2.2").CombinedOutput()
			if err != nil {
				t.Errorf("ping of %d bytes with DF through the uplink: %v\n%s", mtu-100, err, out)
			}
			_ = lan
		})
	}
}

// Without mtuFromUplink, nothing changes: the pod keeps the kernel's 1500
// on a 9000-byte uplink, as with the reference plugin; the result still
// carries every interface's MTU.
func TestMTUDefaultUnchanged(t *testing.T) {
	makeUplink(t, "upl1", 9000)
	n := newNet(t, "1.1.0", "brmtudef", `"isGateway":true`, hostLocal(t, "10.79.0.0/24"))
	c := n.add("pod")
	for i, iface := range c.res.Interfaces {
		if iface.Mtu != 1500 {
			t.Errorf("result interface %d (%s) mtu = %d, want 1500", i, iface.Name, iface.Mtu)
		}
	}
}

// Two networks with isDefaultGateway in one pod: their default routes
// carry the metrics asked for, and traffic leaves by the lower one.
func TestDefaultRouteMetric(t *testing.T) {
	n1 := newNet(t, "1.1.0", "brmet1", `"isDefaultGateway":true,"defaultRouteMetric":100`, hostLocal(t, "10.81.0.0/24"))
	n2 := newNet(t, "1.1.0", "brmet2", `"isDefaultGateway":true,"defaultRouteMetric":200`, hostLocal(t, "10.82.0.0/24"))
	c := n1.add("pod")
	rc := &libcni.RuntimeConf{ContainerID: "pod", IfName: "eth1", NetNS: c.ns.Path()}
	if _, err := n2.tryAdd(rc); err != nil {
		t.Fatalf("ADD of the second network: %v", err)
	}
	t.Cleanup(func() { _ = n2.rt.DelNetworkList(context.Background(), n2.list, rc) })
	out, err := exec.Command("nsenter", "--net="+c.ns.Path(), "ip", "-4", "route", "show", "default").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"via 10.81.0.1 dev eth0 metric 100", "via 10.82.0.1 dev eth1 metric 200"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("default routes:\n%s\nwant one %q", out, want)
		}
	}
	out, err = exec.Command("nsenter", "--net="+c.ns.Path(), "ip", "-4", "route", "get", "198.51.100.7").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev eth0") {
		t.Errorf("route to 198.51.100.7 = %s (%v), want it through eth0 (metric 100)", out, err)
	}
}

// hostVethPrefix names the host ends; args.cni.hostVethName names one
// exactly, and a second pod asking for the same name is refused with code
// 11 while the first keeps its link through the second's DEL.
func TestHostVethNames(t *testing.T) {
	n := newNet(t, "1.1.0", "brnames", `"isGateway":true,"hostVethPrefix":"pod"`, hostLocal(t, "10.83.0.0/24"))
	c := n.add("a")
	if name := c.res.Interfaces[ifHost].Name; !strings.HasPrefix(name, "pod") || len(name) != 11 {
		t.Errorf("host veth %q, want pod + 8 hex digits", name)
	}
	m := newNet(t, "1.1.0", "brnamed", `"isGateway":true,"args":{"cni":{"hostVethName":"web0"}}`, hostLocal(t, "10.84.0.0/24"))
	first := m.add("first")
	if name := first.res.Interfaces[ifHost].Name; name != "web0" {
		t.Fatalf("host veth %q, want web0", name)
	}
	second := &ctr{id: "second", ns: sandbox.NewNS(t)}
	second.rc = m.runtimeConf("second", second.ns)
	_, err := m.tryAdd(second.rc)
	var cniErr *cnitypes.Error
	if !errors.As(err, &cniErr) || cniErr.Code != 11 || !strings.Contains(err.Error(), "web0") {
		t.Errorf("ADD of a second pod asking for web0 = %v, want code 11 naming the name", err)
	}
	m.del(second)
	if ports := bridgePorts(t, "brnamed"); len(ports) != 1 || ports[0] != "web0" {
		t.Errorf("after the second pod's DEL, ports = %v, want [web0]", ports)
	}
	if err := reach(nil, first.ns, first.addr(4)); err != nil {
		t.Errorf("first pod unreachable: %v", err)
	}
}

// removeEmptyBridge: 50 pods added and deleted at once, pairwise racing
// the removal; every ADD succeeds, and the last DEL leaves no bridge. A
// network re-addressed after that gets a bridge with the new gateway only.
func TestRemoveEmptyBridge(t *testing.T) {
	n := newNet(t, "1.1.0", "brgone", `"isGateway":true,"removeEmptyBridge":true`, hostLocal(t, "10.85.0.0/24"))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &ctr{id: fmt.Sprintf("race-%d", i), ns: sandbox.NewNS(t)}
			c.rc = n.runtimeConf(c.id, c.ns)
			if _, err := n.tryAdd(c.rc); err != nil {
				errs <- fmt.Errorf("ADD %s: %w", c.id, err)
				return
			}
			if err := n.rt.DelNetworkList(context.Background(), n.list, c.rc); err != nil {
				errs <- fmt.Errorf("DEL %s: %w", c.id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := netlink.LinkByName("brgone"); err == nil {
		t.Errorf("the bridge is still there after its last port left")
	}
	m := newNet(t, "1.1.0", "brgone", `"isGateway":true,"removeEmptyBridge":true`, hostLocal(t, "10.86.0.0/24"))
	m.add("reip")
	if addrs := bridgeAddrs(t, "brgone"); len(addrs) != 1 || addrs[0] != "10.86.0.1/24" {
		t.Errorf("bridge addresses after the re-IP = %v, want [10.86.0.1/24]", addrs)
	}
}

// Three static addresses in one range set (args.cni.ips): each a lease in
// the reference format, all on the pod's interface and reachable, all
// released by DEL.
func TestSeveralStaticAddresses(t *testing.T) {
	dataDir := t.TempDir()
	ipam := fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.87.0.0/24"}]]}`, dataDir)
	n := newNet(t, "1.1.0", "brstatic", `"isGateway":true,"args":{"cni":{"ips":["10.87.0.10","10.87.0.11","10.87.0.12"]}}`, ipam)
	c := n.add("pod")
	var got []string
	for _, ip := range c.res.IPs {
		got = append(got, ip.Address.String())
		if err := reach(nil, c.ns, ip.Address.IP); err != nil {
			t.Errorf("%s unreachable: %v", ip.Address.IP, err)
		}
	}
	if strings.Join(got, " ") != "10.87.0.10/24 10.87.0.11/24 10.87.0.12/24" {
		t.Errorf("result addresses %v, want the three asked for", got)
	}
	leases := func() []string {
		entries, _ := os.ReadDir(filepath.Join(dataDir, n.list.Name))
		var out []string
		for _, e := range entries {
			if net.ParseIP(e.Name()) != nil {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if l := leases(); len(l) != 3 {
		t.Errorf("lease files %v, want three", l)
	}
	if err := n.check(c); err != nil {
		t.Errorf("CHECK = %v", err)
	}
	n.del(c)
	if l := leases(); len(l) != 0 {
		t.Errorf("lease files after DEL: %v", l)
	}
}

// isGateway's forwarding is written to /run/sysctl.d while a pod needs it,
// so that sysctl --system keeps it on (pkg/sysctlkeep), and leaves with
// the pod.
func TestForwardingKeptWhilePodsLive(t *testing.T) {
	const kept = "/run/sysctl.d/zz-cnisuite.conf"
	n := newNet(t, "1.1.0", "brkeep", `"isGateway":true`, hostLocal(t, "10.89.0.0/24"))
	a, b := n.add("a"), n.add("b")
	for _, c := range []*ctr{a, b} {
		data, err := os.ReadFile(kept)
		if err != nil || !strings.Contains(string(data), "net/ipv4/ip_forward = 1") {
			t.Fatalf("%s = %q, %v; want ip_forward kept", kept, data, err)
		}
		n.del(c)
	}
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("%s still there after the last pod's DEL: %v", kept, err)
	}
}

// ipMasqSourceIPv4: traffic from the pod leaves with the address asked
// for, a secondary one of the uplink, where masquerade would pick the
// primary; the receiver sees it in the packets. Every backend, and the
// configuration without a backend key.
func TestIPMasqSource(t *testing.T) {
	for i, backend := range []string{"", "iptables", "nftables"} {
		t.Run("backend="+backend, func(t *testing.T) {
			lan := makeUplink(t, "upls", 1500)
			mustAddr(t, "upls", "192.0.2.7/24")
			keys := `"isDefaultGateway":true,"ipMasq":true,"ipMasqSourceIPv4":"192.0.2.7"`
			if backend != "" {
				keys += fmt.Sprintf(`,"ipMasqBackend":%q`, backend)
			}
			n := newNet(t, "1.1.0", fmt.Sprintf("brsnat%d", i), keys, hostLocal(t, fmt.Sprintf("10.%d.0.0/24", 90+i)))
			c := n.add("pod")
			l, err := listenIn(lan, "192.0.2.2:8099")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			seen := make(chan string, 1)
			go func() {
				if conn, err := l.Accept(); err == nil {
					seen <- conn.RemoteAddr().(*net.TCPAddr).IP.String()
					conn.Close()
				}
			}()
			err = in(c.ns, func() error {
				conn, err := net.DialTimeout("tcp", "192.0.2.2:8099", 10*time.Second)
				if err == nil {
					conn.Close()
				}
				return err
			})
			if err != nil {
				t.Fatalf("pod to the LAN: %v", err)
			}
			select {
			case src := <-seen:
				if src != "192.0.2.7" {
					t.Errorf("the LAN saw the pod's traffic from %s, want 192.0.2.7", src)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the LAN accepted nothing in 10 s")
			}
			if err := n.check(c); err != nil {
				t.Errorf("CHECK = %v", err)
			}
		})
	}
}

func mustAddr(t *testing.T, name, cidr string) {
	t.Helper()
	l := hostLinkOrIn(t, name)
	a, _ := netlink.ParseAddr(cidr)
	a.Flags = unix.IFA_F_NODAD
	if err := netlink.AddrAdd(l, a); err != nil {
		t.Fatal(err)
	}
}
