package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/sysctl"
	"cnisuite/test/sandbox"
)

var matrix = []struct{ backend, version string }{
	{firewall.KindNFTables, "1.0.0"},
	{firewall.KindNFTables, "0.4.0"},
	{firewall.KindIPTables, "1.0.0"},
	{firewall.KindIPTables, "0.4.0"},
}

func enableForwarding(t *testing.T) {
	t.Helper()
	for _, s := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if err := sysctl.Set(s, "1"); err != nil {
			t.Fatalf("sysctl %s: %v", s, err)
		}
	}
}

// TestReach drives bridge, host-local and portmap through libcni and sends
// TCP and UDP through the mappings from every place a user would.
func TestReach(t *testing.T) {
	sandbox.Require(t)
	for i, m := range matrix {
		t.Run(m.backend+"/"+m.version, func(t *testing.T) {
			enableForwarding(t)
			n := newPMNet(t, m.version, m.backend, fmt.Sprintf("pmbr%d", i), 60+i)
			client := newPeer(t, fmt.Sprintf("pmup%d", i), 10+i)
			a := n.add("ctr-a", mapping(8080, 80, "tcp", ""), mapping(5353, 53, "udp", ""))
			b := n.add("ctr-b")
			defer n.del(a)
			defer n.del(b)
			cases := []struct {
				name  string
				from  *pmCtr
				peer  *peer
				proto string
				ip    net.IP
				port  int
			}{
				{"tcp from the node to the container over IPv6", nil, nil, "tcp", a.addr(6), 80},
				{"tcp from outside to the container over IPv6", nil, client, "tcp", a.addr(6), 80},
				{"tcp from the node to its own IPv6 address", nil, nil, "tcp", client.nodeIP6, 8080},
				{"tcp from outside to the node", nil, client, "tcp", client.nodeIP, 8080},
				{"udp from outside to the node", nil, client, "udp", client.nodeIP, 5353},
				{"tcp over IPv6 from outside", nil, client, "tcp", client.nodeIP6, 8080},
				{"udp over IPv6 from outside", nil, client, "udp", client.nodeIP6, 5353},
				{"tcp from the node to its own address", nil, nil, "tcp", client.nodeIP, 8080},
				{"tcp from the node to 127.0.0.1", nil, nil, "tcp", net.ParseIP("127.0.0.1"), 8080},
				{"udp from the node to 127.0.0.1", nil, nil, "udp", net.ParseIP("127.0.0.1"), 5353},
				{"tcp from another container", b, nil, "tcp", client.nodeIP, 8080},
				{"udp from another container", b, nil, "udp", client.nodeIP, 5353},
				{"tcp hairpin from the container itself", a, nil, "tcp", client.nodeIP, 8080},
				{"udp hairpin from the container itself", a, nil, "udp", client.nodeIP, 5353},
			}
			waitDAD(t, a.ns, b.ns)
			for _, tc := range cases {
				from := client.ns
				switch {
				case tc.from != nil:
					from = tc.from.ns
				case tc.peer == nil:
					from = nil
				}
				got, err := ask(from, tc.proto, tc.ip, tc.port)
				if err != nil || got != "ctr-a" {
					t.Errorf("%s: %s %s:%d answered %q, %v; want ctr-a", tc.name, tc.proto, tc.ip, tc.port, got, err)
				}
			}
			if err := n.rt.CheckNetworkList(context.Background(), n.list, a.rc); err != nil {
				t.Errorf("CHECK after ADD: %v", err)
			}
			if t.Failed() {
				t.Logf("container result: %+v\nruleset:\n%s", a.res, ruleset(t))
			}
		})
	}
}

// TestTransitUntouched: a router topology where a client reaches a server
// on another host, on the same port as a mapping, through the node.
func TestTransitUntouched(t *testing.T) {
	sandbox.Require(t)
	for i, m := range matrix[:3:3] {
		if m.version != "1.0.0" {
			continue
		}
		t.Run(m.backend, func(t *testing.T) {
			enableForwarding(t)
			n := newPMNet(t, m.version, m.backend, fmt.Sprintf("pmtr%d", i), 70+i)
			client := newPeer(t, fmt.Sprintf("pmcl%d", i), 30+i)
			server := newPeer(t, fmt.Sprintf("pmsv%d", i), 40+i)
			serve(t, server.ns, "other-host")
			a := n.add("ctr-t", mapping(80, 80, "tcp", ""), mapping(53, 53, "udp", ""))
			defer n.del(a)
			waitDAD(t, nil, client.ns, server.ns)
			for _, proto := range []string{"tcp", "udp"} {
				port := map[string]int{"tcp": 80, "udp": 53}[proto]
				for _, ip := range []net.IP{server.peerIP, server.peerIP6} {
					got, err := ask(client.ns, proto, ip, port)
					if err != nil || got != "other-host" {
						t.Errorf("%s to %s:%d through the node answered %q, %v; want other-host", proto, ip, port, got, err)
					}
				}
			}
			if got, err := ask(client.ns, "tcp", client.nodeIP, 80); got != "ctr-t" {
				t.Errorf("tcp to the node's own address answered %q, %v; want ctr-t", got, err)
			}
		})
	}
}

// TestUDPFollowsReplacement: a client keeps sending to a UDP host port; the
// container behind it is replaced; the next datagrams reach the new one.
func TestUDPFollowsReplacement(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		t.Run(backend, func(t *testing.T) {
			enableForwarding(t)
			n := newPMNet(t, "1.0.0", backend, fmt.Sprintf("pmrp%d", i), 80+i)
			client := newPeer(t, fmt.Sprintf("pmrc%d", i), 50+i)
			followReplacement(t, n, client, 5353, mapping(5353, 53, "udp", ""), 53)
		})
	}
}

// followReplacement sends from the client to the node's port, mapped by m
// to the container's ctrPort; replaces the container (DEL, then ADD of
// another with the same mapping) while the flow goes on; and checks that
// the next datagram reaches the new container.
func followReplacement(t *testing.T, n *pmNet, client *peer, port int, m map[string]any, ctrPort int) {
	t.Helper()
	add := func(id string) *pmCtr {
		c := n.add(id, m)
		if ctrPort != 53 { // add serves 53
			servePorts(t, c.ns, id, nil, []int{ctrPort})
		}
		return c
	}
	old := add("ctr-old")
	var conn net.Conn
	if err := client.ns.Do(func() (err error) {
		conn, err = net.DialUDP("udp", &net.UDPAddr{Port: 40000}, &net.UDPAddr{IP: client.nodeIP, Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := exchange(conn); got != "ctr-old" {
		t.Fatalf("before replacement the flow reached %q, want ctr-old", got)
	}
	if err := n.del(old); err != nil {
		t.Fatalf("DEL old: %v", err)
	}
	exchange(conn) // keeps the flow alive while no container is there
	nw := add("ctr-new")
	defer n.del(nw)
	if got := exchange(conn); got != "ctr-new" {
		t.Errorf("within a second of the replacement the flow reached %q, want ctr-new", got)
	}
}

// exchange sends one datagram and returns the answer ("" after a second).
func exchange(c net.Conn) string {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("hi")); err != nil {
		return ""
	}
	buf := make([]byte, 64)
	k, _ := c.Read(buf)
	return string(buf[:k])
}

// TestDelCheckGC covers DEL without portMappings and after the netns is
// gone, CHECK after a rule is deleted behind the plugin's back, and GC.
func TestDelCheckGC(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		t.Run(backend, func(t *testing.T) {
			n := newPMNet(t, "1.1.0", backend, fmt.Sprintf("pmdl%d", i), 90+i)
			a := n.add("ctr-1", mapping(8080, 80, "tcp", ""))
			a.rc.CapabilityArgs = nil // the runtime forgets the mappings on DEL
			if err := n.del(a); err != nil {
				t.Fatalf("DEL without portMappings: %v", err)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("DEL without portMappings left %q", left)
			}
			b := n.add("ctr-2", mapping(8081, 80, "tcp", ""))
			if err := sandbox.RemoveNS(b.ns.Path()); err != nil {
				t.Fatal(err)
			}
			if err := n.del(b); err != nil {
				t.Fatalf("DEL after the netns is gone: %v", err)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("DEL after the netns is gone left %q", left)
			}
			c := n.add("ctr-3", mapping(8082, 80, "tcp", ""))
			deleteOneRule(t, backend, 8082)
			if err := n.rt.CheckNetworkList(context.Background(), n.list, c.rc); err == nil {
				t.Errorf("CHECK after a rule was deleted behind the plugin's back succeeded")
			}
			d := n.add("ctr-4", mapping(8083, 80, "tcp", ""))
			e := n.add("ctr-5", mapping(8084, 80, "tcp", ""))
			valid := []*libcni.RuntimeConf{e.rc}
			if err := n.rt.GCNetworkList(context.Background(), n.list, &libcni.GCArgs{ValidAttachments: attachments(valid)}); err != nil {
				t.Fatalf("GC: %v", err)
			}
			if err := n.rt.CheckNetworkList(context.Background(), n.list, e.rc); err != nil {
				t.Errorf("CHECK of the kept attachment after GC: %v", err)
			}
			if err := n.rt.CheckNetworkList(context.Background(), n.list, d.rc); err == nil {
				t.Errorf("CHECK of a stale attachment after GC succeeded; its rules should be gone")
			}
			for _, x := range []*pmCtr{c, d, e} {
				_ = n.del(x)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("rules left at the end: %q", left)
			}
		})
	}
}

func attachments(rcs []*libcni.RuntimeConf) []cnitypes.GCAttachment {
	var out []cnitypes.GCAttachment
	for _, rc := range rcs {
		out = append(out, cnitypes.GCAttachment{ContainerID: rc.ContainerID, IfName: rc.IfName})
	}
	return out
}

// deleteOneRule deletes what DNATs hostPort (over TCP, on every address)
// with the system tools, as an operator or another program would: the
// element of port_dnat on nftables, the first rule of the first DNAT chain
// on iptables.
func deleteOneRule(t *testing.T, backend string, hostPort int) {
	t.Helper()
	var cmd *exec.Cmd
	if backend == firewall.KindNFTables {
		// What DNATs the port is its element: the rules are fixed.
		cmd = exec.Command("nft", "delete", "element", "ip", "cnisuite_portmap", "port_dnat", fmt.Sprintf("{ tcp . %d }", hostPort))
	} else {
		cmd = exec.Command("sh", "-c", `c=$(iptables-save -t nat | grep -o '^:CNIS-DN-[^ ]*' | head -1 | tr -d :); iptables -t nat -D $c 1`)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deleting a rule behind the plugin's back: %v: %s", err, out)
	}
}

// TestParallel runs 30 ADD+DEL pairs at once; none may fail and nothing
// may be left.
func TestParallel(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		t.Run(backend, func(t *testing.T) {
			n := newPMNet(t, "1.0.0", backend, fmt.Sprintf("pmpa%d", i), 100+i)
			var wg sync.WaitGroup
			errs := make(chan error, 60)
			for k := 0; k < 30; k++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					id := fmt.Sprintf("par-%d", k)
					rc := &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: sandbox.NewNS(t).Path(),
						CapabilityArgs: map[string]any{"portMappings": []map[string]any{mapping(20000+k, 80, "tcp", ""), mapping(20000+k, 53, "udp", "")}}}
					if _, err := n.rt.AddNetworkList(context.Background(), n.list, rc); err != nil {
						errs <- fmt.Errorf("ADD %s: %w", id, err)
					}
					if err := n.rt.DelNetworkList(context.Background(), n.list, rc); err != nil {
						errs <- fmt.Errorf("DEL %s: %w", id, err)
					}
				}(k)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("rules left after 30 parallel ADD+DEL: %q", left)
			}
		})
	}
}

// waitDAD waits (at most 10 s) until the containers' IPv6 addresses have
// left duplicate address detection, which the kernel runs after ADD.
func waitDAD(t *testing.T, nss ...*ns.NetNS) {
	t.Helper()
	for _, n := range nss {
		for try := 0; ; try++ {
			tentative := false
			_ = in(n, func() error {
				addrs, err := netlink.AddrList(nil, netlink.FAMILY_V6)
				for _, a := range addrs {
					tentative = tentative || a.Flags&unix.IFA_F_TENTATIVE != 0
				}
				return err
			})
			if !tentative {
				break
			}
			if try == 100 {
				t.Fatalf("IPv6 address still tentative after 10 s")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func in(n *ns.NetNS, fn func() error) error {
	if n == nil {
		return fn()
	}
	return n.Do(fn)
}
