package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// The node of the isolation tests: the test's namespace, with an uplink
// (the default route of both families) to an "outside" namespace that has
// no route back to any container subnet, so that only masqueraded traffic
// gets answers; and, for "strict", a side link to a namespace that is not
// an uplink.

// Addresses of the node's links: uplink (node .1, outside .2) and side link.
var (
	upNode4, upPeer4     = net.ParseIP("203.0.113.1"), net.ParseIP("203.0.113.2")
	upNode6, upPeer6     = net.ParseIP("2001:db8:113::1"), net.ParseIP("2001:db8:113::2")
	sideNode4, sidePeer4 = net.ParseIP("198.51.100.1"), net.ParseIP("198.51.100.2")
	sideNode6, sidePeer6 = net.ParseIP("2001:db8:100::1"), net.ParseIP("2001:db8:100::2")
)

// run runs a command inside n (nil: the test's namespace) or fails the test.
func run(t testing.TB, n *ns.NetNS, args ...string) {
	t.Helper()
	if n != nil {
		args = append([]string{"nsenter", "--net=" + n.Path()}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// peerLink makes a namespace joined to the node by a veth pair: hostName
// on the node with node4/node6, eth0 in the peer with peer4/peer6. With
// uplink, the node's default routes go through it; otherwise the peer's
// default routes go through the node.
func peerLink(t testing.TB, hostName string, node4, node6, peer4, peer6 net.IP, uplink bool) *ns.NetNS {
	t.Helper()
	peer := sandbox.NewNS(t)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostName}, PeerName: hostName + "p"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth %s: %v", hostName, err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	p, err := netlink.LinkByName(hostName + "p")
	if err == nil {
		err = netlink.LinkSetNsFd(p, int(peer.Fd()))
	}
	if err != nil {
		t.Fatalf("moving %sp: %v", hostName, err)
	}
	run(t, peer, "ip", "link", "set", hostName+"p", "name", "eth0")
	for _, side := range []struct {
		n      *ns.NetNS
		dev    string
		v4, v6 net.IP
	}{{nil, hostName, node4, node6}, {peer, "eth0", peer4, peer6}} {
		run(t, side.n, "ip", "addr", "add", side.v4.String()+"/24", "dev", side.dev)
		run(t, side.n, "ip", "addr", "add", side.v6.String()+"/64", "dev", side.dev, "nodad")
		run(t, side.n, "ip", "link", "set", side.dev, "up")
	}
	routeNS, via4, via6 := peer, node4, node6
	if uplink {
		routeNS, via4, via6 = nil, peer4, peer6
	}
	run(t, routeNS, "ip", "route", "add", "default", "via", via4.String())
	run(t, routeNS, "ip", "-6", "route", "add", "default", "via", via6.String())
	return peer
}

// setBrNetfilter turns the bridge's calls into iptables/ip6tables on or
// off in the test's namespace (only inside the sandbox: it is a setting
// of the namespace the test runs in), and back to what it was when the
// test ends.
func setBrNetfilter(t testing.TB, on bool) {
	t.Helper()
	sandbox.Require(t)
	v := "0"
	if on {
		v = "1"
	}
	for _, k := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables"} {
		path := "/proc/sys/net/bridge/" + k
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Errorf("putting %s back to %s: %v", path, strings.TrimSpace(string(old)), err)
			}
		})
	}
}

// isoNet is a dual-stack network chained with portmap: bridge br with
// gateway and masquerade plus the extra bridge keys (JSON members, each
// followed by a comma).
func isoNet(t testing.TB, br, extra string, subnets ...string) *testNet {
	t.Helper()
	sandbox.Require(t)
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"net-%s","plugins":[`+
		`{"type":"bridge","bridge":%q,"isDefaultGateway":true,"ipMasq":true,%s"ipam":%s},`+
		`{"type":"portmap","capabilities":{"portMappings":true}}]}`, br, br, extra, hostLocal(t, subnets...))
	sandbox.RemoveLinkAtEnd(t, br)
	return &testNet{t: t, rt: sandbox.Runtime(t), list: sandbox.ConfList(t, conf), bridge: br}
}

// addMapped attaches a container whose TCP port ctrPort is mapped to
// hostPort on every node address, and which accepts no ICMP redirects (so
// that a route via the gateway stays one).
func (n *testNet) addMapped(id string, hostPort, ctrPort int) *ctr {
	n.t.Helper()
	c := &ctr{id: id, ns: sandbox.NewNS(n.t)}
	c.rc = n.runtimeConf(id, c.ns)
	c.rc.CapabilityArgs = map[string]interface{}{"portMappings": []map[string]interface{}{
		{"hostPort": hostPort, "containerPort": ctrPort, "protocol": "tcp"}}}
	res, err := n.tryAdd(c.rc)
	if err != nil {
		n.t.Fatalf("ADD %s: %v", id, err)
	}
	c.res = res
	n.t.Cleanup(func() { _ = n.rt.DelNetworkList(context.Background(), n.list, c.rc) })
	run(n.t, c.ns, "sysctl", "-qw", "net.ipv4.conf.all.accept_redirects=0", "net.ipv6.conf.all.accept_redirects=0")
	return c
}

// tcp opens a TCP connection from namespace from to a listener at addr:port
// in namespace to (port 0: any), waiting up to timeout.
func tcp(from, to *ns.NetNS, addr net.IP, port int, timeout time.Duration) error {
	var l net.Listener
	listen := func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(addr.String(), fmt.Sprint(port)))
		return err
	}
	if err := in(to, listen); err != nil {
		return fmt.Errorf("listening on %v: %w", addr, err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	return in(from, func() error {
		c, err := net.DialTimeout("tcp", l.Addr().String(), timeout)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// dialMapped connects from namespace from to dst:hostPort, which the node
// maps to port ctrPort of container c, listening there.
func dialMapped(from *ns.NetNS, c *ctr, family int, ctrPort int, dst net.IP, hostPort int) error {
	l, err := listenIn(c.ns, net.JoinHostPort(c.addr(family).String(), fmt.Sprint(ctrPort)))
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	return in(from, func() error {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(dst.String(), fmt.Sprint(hostPort)), 10*time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

func listenIn(n *ns.NetNS, addr string) (net.Listener, error) {
	var l net.Listener
	err := in(n, func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// ping sends one echo request from namespace from to addr and waits up to
// wait seconds for the reply.
func ping(from *ns.NetNS, addr net.IP, wait int) error {
	args := []string{"ping", "-c1", "-W", fmt.Sprint(wait), addr.String()}
	if from != nil {
		args = append([]string{"nsenter", "--net=" + from.Path()}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// udpArrives sends a few datagrams from namespace from to a socket on addr
// in namespace to and reports whether any arrived within wait: a one-way
// path, which a connection cannot show when the replies are what is dropped.
func udpArrives(from, to *ns.NetNS, addr net.IP, wait time.Duration) error {
	var pc net.PacketConn
	if err := in(to, func() (err error) {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(addr.String(), "0"))
		return err
	}); err != nil {
		return fmt.Errorf("listening on %v: %w", addr, err)
	}
	defer pc.Close()
	target := pc.LocalAddr().String()
	go func() {
		_ = in(from, func() error {
			c, err := net.Dial("udp", target)
			if err != nil {
				return err
			}
			defer c.Close()
			for i := 0; i < 5; i++ {
				_, _ = c.Write([]byte("probe")) // a lost datagram is what is measured
				time.Sleep(wait / 5)
			}
			return nil
		})
	}()
	if err := pc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	_, _, err := pc.ReadFrom(make([]byte, 16))
	return err
}
