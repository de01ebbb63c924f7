package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/concurrent"
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/ns"
)

// blockedWait is how long a connection that must not be made is given: the
// SYN is dropped, so the dial can only time out. Three times the slowest
// first contact seen when allowed (an IPv6 route back through the
// gateway, with neighbour discovery on both legs: about 1 s).
const blockedWait = 3 * time.Second

var backends = []string{firewall.KindNFTables, firewall.KindIPTables}

// TestICCOff: with "icc": false two containers of one bridge reach neither
// each other directly (layer 2) nor through the gateway (routed), IPv4 and
// IPv6, ping and TCP, with br_netfilter on and off, on both backends; each
// still reaches the gateway and the outside (masqueraded), and receives its
// port-mapped traffic from the node and from outside. The same steps with
// icc left out connect, so the refusals are the rules' doing.
func TestICCOff(t *testing.T) {
	k := 0
	for _, backend := range backends {
		for _, brnf := range []bool{true, false} {
			k++
			t.Run(fmt.Sprintf("%s/br_netfilter_%v", backend, brnf), func(t *testing.T) {
				setBrNetfilter(t, brnf)
				outside := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
				n := isoNet(t, fmt.Sprintf("icc%d", k), `"icc":false,"ipMasqBackend":"`+backend+`",`,
					fmt.Sprintf("10.91.%d.0/24", k), fmt.Sprintf("fd91:%d::/64", k))
				a, b := n.addMapped("icc-a", 18080, 8080), n.addMapped("icc-b", 18081, 8081)
				assertICC(t, a, b, outside, true)
				if err := n.check(a); err != nil {
					t.Errorf("CHECK: %v", err)
				}
			})
		}
	}
	t.Run("icc_left_out", func(t *testing.T) {
		outside := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
		n := isoNet(t, "icc9", "", "10.91.9.0/24", "fd91:9::/64")
		a, b := n.addMapped("icc-a", 18080, 8080), n.addMapped("icc-b", 18081, 8081)
		assertICC(t, a, b, outside, false)
	})
}

func assertICC(t *testing.T, a, b *ctr, outside *ns.NetNS, blocked bool) {
	t.Helper()
	for _, fam := range []int{4, 6} {
		gw, node, peer := gateway(t, a, fam), upNode4, upPeer4
		if fam == 6 {
			node, peer = upNode6, upPeer6
		}
		wantConnect(t, fmt.Sprintf("a → gateway %v", gw), tcp(a.ns, nil, gw, 0, 10*time.Second))
		wantConnect(t, fmt.Sprintf("a → outside %v", peer), tcp(a.ns, outside, peer, 0, 10*time.Second))
		wantConnect(t, "outside → a's mapped port", dialMapped(outside, a, fam, 8080, node, 18080))
		wantConnect(t, "node → a's mapped port", dialMapped(nil, a, fam, 8080, node, 18080))
	}
	wait := 10 * time.Second
	if blocked {
		wait = blockedWait
	}
	for _, routed := range []bool{false, true} {
		var ps []probe
		for _, fam := range []int{4, 6} {
			dst, how := b.addr(fam), "directly"
			if routed {
				how = "through the gateway"
				run(t, a.ns, "ip", "route", "add", dst.String(), "via", gateway(t, a, fam).String())
			}
			ps = append(ps,
				probe{fmt.Sprintf("TCP a → b %v %s", dst, how), func() error { return tcp(a.ns, b.ns, dst, 0, wait) }},
				probe{fmt.Sprintf("ping a → b %v %s", dst, how), func() error { return ping(a.ns, dst, int(wait/time.Second)) }},
				probe{fmt.Sprintf("UDP a → b %v %s (one way)", dst, how), func() error { return udpArrives(a.ns, b.ns, dst, wait) }})
			if !routed {
				src := a.addr(fam)
				ps = append(ps, probe{fmt.Sprintf("TCP b → a %v", src), func() error { return tcp(b.ns, a.ns, src, 0, wait) }})
			}
		}
		runProbes(t, ps, !blocked)
		if routed {
			for _, fam := range []int{4, 6} {
				run(t, a.ns, "ip", "route", "del", b.addr(fam).String(), "via", gateway(t, a, fam).String())
			}
		}
	}
}

// probe is one attempt to reach something.
type probe struct {
	what string
	try  func() error
}

// runProbes makes the attempts at once (each blocked one waits out its
// timeout) and checks that each connects, or that none does.
func runProbes(t *testing.T, ps []probe, connect bool) {
	t.Helper()
	tries := make([]func() error, len(ps))
	for i, p := range ps {
		tries[i] = p.try
	}
	for i, err := range concurrent.Run(tries...) {
		if connect {
			wantConnect(t, ps[i].what, err)
		} else {
			wantBlocked(t, ps[i].what, err)
		}
	}
}

// TestIsolate: two networks with "isolate": true reach each other in
// neither direction, IPv4 and IPv6, while each reaches the outside and
// receives its mapped ports, and a network without the key reaches them
// (netavark's meaning: isolated from the other isolated networks). The
// containers of one isolated network still reach each other; the
// network's shared chains stay until its last container is deleted.
func TestIsolate(t *testing.T) {
	for k, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			outside := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
			extra := `"ipMasqBackend":"` + backend + `",`
			subnets := func(i int) []string {
				return []string{fmt.Sprintf("10.92.%d.0/24", 10*k+i), fmt.Sprintf("fd92:%d::/64", 10*k+i)}
			}
			x := isoNet(t, fmt.Sprintf("isox%d", k), `"isolate":true,`+extra, subnets(1)...)
			y := isoNet(t, fmt.Sprintf("isoy%d", k), `"isolate":true,`+extra, subnets(2)...)
			z := isoNet(t, fmt.Sprintf("isoz%d", k), extra, subnets(3)...)
			x1, x2 := x.addMapped("iso-x1", 18090, 8090), x.addMapped("iso-x2", 18092, 8092)
			y1, z1 := y.addMapped("iso-y1", 18091, 8091), z.addMapped("iso-z1", 18093, 8093)
			for _, fam := range []int{4, 6} {
				node, peer := upNode4, upPeer4
				if fam == 6 {
					node, peer = upNode6, upPeer6
				}
				runProbes(t, []probe{
					{"x1 → y1", func() error { return tcp(x1.ns, y1.ns, y1.addr(fam), 0, blockedWait) }},
					{"y1 → x1", func() error { return tcp(y1.ns, x1.ns, x1.addr(fam), 0, blockedWait) }},
				}, false)
				wantConnect(t, "x1 → x2", tcp(x1.ns, x2.ns, x2.addr(fam), 0, 10*time.Second))
				wantConnect(t, "z1 → x1", tcp(z1.ns, x1.ns, x1.addr(fam), 0, 10*time.Second))
				wantConnect(t, "x1 → z1", tcp(x1.ns, z1.ns, z1.addr(fam), 0, 10*time.Second))
				wantConnect(t, "x1 → outside", tcp(x1.ns, outside, peer, 0, 10*time.Second))
				wantConnect(t, "y1 → outside", tcp(y1.ns, outside, peer, 0, 10*time.Second))
				wantConnect(t, "outside → x1's mapped port", dialMapped(outside, x1, fam, 8090, node, 18090))
				wantConnect(t, "node → x1's mapped port", dialMapped(nil, x1, fam, 8090, node, 18090))
			}
			if err := x.check(x1); err != nil {
				t.Errorf("CHECK x1: %v", err)
			}
			from := nftmodel.NetChainName(nftmodel.PrefixIsoFrom, firewall.Owner{Plugin: firewall.PluginBridge, Network: "net-" + x.bridge})
			x.del(x1)
			wantBlocked(t, "x2 → y1 after x1 left", tcp(x2.ns, y1.ns, y1.addr(4), 0, blockedWait))
			x.del(x2)
			if rs := ruleset(t); strings.Contains(rs, from) {
				t.Errorf("chain %s left after the network's last DEL:\n%s", from, rs)
			}
		})
	}
}

// TestIsolateStrict: a container of a network with "isolate": "strict"
// reaches the outside through the node's uplink but neither reaches nor is
// reached from a namespace behind another link of the node, which a
// container of a network without the key does reach; its mapped ports
// work from the node and from outside.
func TestIsolateStrict(t *testing.T) {
	for k, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			outside := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
			side := peerLink(t, "side0", sideNode4, sideNode6, sidePeer4, sidePeer6, false)
			extra := `"ipMasqBackend":"` + backend + `",`
			s := isoNet(t, fmt.Sprintf("isos%d", k), `"isolate":"strict",`+extra,
				fmt.Sprintf("10.93.%d.0/24", 10*k+1), fmt.Sprintf("fd93:%d::/64", 10*k+1))
			p := isoNet(t, fmt.Sprintf("isop%d", k), extra, fmt.Sprintf("10.93.%d.0/24", 10*k+2), fmt.Sprintf("fd93:%d::/64", 10*k+2))
			s1, p1 := s.addMapped("strict-1", 18095, 8095), p.addMapped("plain-1", 18096, 8096)
			for _, fam := range []int{4, 6} {
				node, peer, sidePeer := upNode4, upPeer4, sidePeer4
				if fam == 6 {
					node, peer, sidePeer = upNode6, upPeer6, sidePeer6
				}
				wantConnect(t, "plain → side", tcp(p1.ns, side, sidePeer, 0, 10*time.Second))
				wantConnect(t, "side → plain", tcp(side, p1.ns, p1.addr(fam), 0, 10*time.Second))
				runProbes(t, []probe{
					{"strict → side", func() error { return tcp(s1.ns, side, sidePeer, 0, blockedWait) }},
					{"side → strict", func() error { return tcp(side, s1.ns, s1.addr(fam), 0, blockedWait) }},
				}, false)
				wantConnect(t, "strict → outside", tcp(s1.ns, outside, peer, 0, 10*time.Second))
				wantConnect(t, "strict → gateway", tcp(s1.ns, nil, gateway(t, s1, fam), 0, 10*time.Second))
				wantConnect(t, "outside → strict's mapped port", dialMapped(outside, s1, fam, 8095, node, 18095))
				wantConnect(t, "node → strict's mapped port", dialMapped(nil, s1, fam, 8095, node, 18095))
			}
			if err := s.check(s1); err != nil {
				t.Errorf("CHECK: %v", err)
			}
		})
	}
}

func wantConnect(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v, want a connection", what, err)
	}
}

func wantBlocked(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got through, want it blocked", what)
	}
}

// gateway returns the gateway of c's address of the family.
func gateway(t *testing.T, c *ctr, family int) net.IP {
	t.Helper()
	for _, ip := range c.res.IPs {
		if (ip.Address.IP.To4() != nil) == (family == 4) && ip.Gateway != nil {
			return ip.Gateway
		}
	}
	t.Fatalf("no IPv%d gateway in %+v", family, c.res.IPs)
	return nil
}
