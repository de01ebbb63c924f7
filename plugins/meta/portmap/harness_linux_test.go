package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/test/sandbox"
)

// pmNet is a bridge + host-local + portmap conflist driven through libcni
// in the test's own namespace, which plays the node.
type pmNet struct {
	t    testing.TB
	rt   *libcni.CNIConfig
	list *libcni.NetworkConfigList
}

// pmCtr is one container with its servers.
type pmCtr struct {
	id  string
	ns  *ns.NetNS
	rc  *libcni.RuntimeConf
	res *types.Result
	raw []byte // the ADD result as the plugins printed it
}

// newPMNet returns a network of bridge br on 10.<octet>.0.0/24 and
// fd00:<octet>::/64 whose portmap allows port ranges.
func newPMNet(t testing.TB, version, backend, br string, octet int) *pmNet {
	t.Helper()
	sandbox.Require(t)
	backendKey := fmt.Sprintf(`"backend":%q,`, backend)
	if backend == "" { // as users write it: no key, the plugin chooses
		backendKey = ""
	}
	conf := fmt.Sprintf(`{"cniVersion":%q,"name":"pm-%s","plugins":[
	  {"type":"bridge","bridge":%q,"isGateway":true,"isDefaultGateway":true,"hairpinMode":true,
	   "ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.%d.0.0/24"}],[{"subnet":"fd00:%d::/64"}]]}},
	  {"type":"portmap",%s"allowPortRanges":true,"capabilities":{"portMappings":true}}]}`,
		version, br, br, t.TempDir(), octet, octet, backendKey)
	sandbox.RemoveLinkAtEnd(t, br)
	return &pmNet{t: t, rt: sandbox.Runtime(t), list: sandbox.ConfList(t, conf)}
}

// mapping is one portMappings capability entry.
func mapping(host, ctr int, proto, hostIP string) map[string]any {
	m := map[string]any{"hostPort": host, "containerPort": ctr, "protocol": proto}
	if hostIP != "" {
		m["hostIP"] = hostIP
	}
	return m
}

// add attaches a fresh container namespace with the given mappings and
// starts a TCP and a UDP server answering the container ID on ports 80 and
// 53 inside it.
func (n *pmNet) add(id string, maps ...map[string]any) *pmCtr {
	n.t.Helper()
	c := &pmCtr{id: id, ns: sandbox.NewNS(n.t)}
	c.rc = &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: c.ns.Path(),
		CapabilityArgs: map[string]any{"portMappings": maps}}
	out, err := n.rt.AddNetworkList(context.Background(), n.list, c.rc)
	if err != nil {
		n.t.Fatalf("ADD %s: %v", id, err)
	}
	data, _ := json.Marshal(out)
	c.raw = data
	if c.res, err = types.DecodeResult(data, n.list.CNIVersion); err != nil {
		n.t.Fatalf("ADD %s result: %v", id, err)
	}
	serve(n.t, c.ns, id)
	return c
}

func (n *pmNet) del(c *pmCtr) error {
	return n.rt.DelNetworkList(context.Background(), n.list, c.rc)
}

// addr returns the container's address of a family (4 or 6).
func (c *pmCtr) addr(family int) net.IP {
	for _, ip := range c.res.IPs {
		if (ip.Address.IP.To4() != nil) == (family == 4) {
			return ip.Address.IP
		}
	}
	return nil
}

// serve starts servers answering id inside netns on TCP and UDP ports 80
// and 53 of every address of both families; they stop with the test.
func serve(t testing.TB, n *ns.NetNS, id string) {
	t.Helper()
	servePorts(t, n, id, []int{80}, []int{53})
}

// servePorts starts servers answering id inside netns on the TCP and UDP
// ports given, of every address of both families; they stop with the test.
func servePorts(t testing.TB, n *ns.NetNS, id string, tcp, udp []int) {
	t.Helper()
	var tls []net.Listener
	var uls []net.PacketConn
	err := n.Do(func() error {
		for _, fam := range []string{"4", "6"} {
			for _, p := range tcp {
				tl, err := net.Listen("tcp"+fam, fmt.Sprintf(":%d", p))
				if err != nil {
					return err
				}
				tls = append(tls, tl)
			}
			for _, p := range udp {
				ul, err := net.ListenPacket("udp"+fam, fmt.Sprintf(":%d", p))
				if err != nil {
					return err
				}
				uls = append(uls, ul)
			}
		}
		return nil
	})
	for _, tl := range tls {
		t.Cleanup(func() { tl.Close() })
		go answerTCP(tl, id)
	}
	for _, ul := range uls {
		t.Cleanup(func() { ul.Close() })
		go answerUDP(ul, id)
	}
	if err != nil {
		t.Fatalf("starting servers in %s: %v", id, err)
	}
}

func answerTCP(l net.Listener, id string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(id))
		c.Close()
	}
}

func answerUDP(c net.PacketConn, id string) {
	buf := make([]byte, 64)
	for {
		_, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = c.WriteTo([]byte(id), from)
	}
}

// ask connects from namespace from (nil: the node) to addr:port and
// returns what the server answered.
func ask(from *ns.NetNS, proto string, ip net.IP, port int) (string, error) {
	var answer string
	do := func() error {
		c, err := net.DialTimeout(proto, net.JoinHostPort(ip.String(), fmt.Sprint(port)), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if proto == "udp" {
			if _, err := c.Write([]byte("hi")); err != nil {
				return err
			}
		}
		buf := make([]byte, 64)
		k, err := c.Read(buf)
		answer = string(buf[:k])
		return err
	}
	if from == nil {
		return answer, do()
	}
	return answer, from.Do(do)
}

// peer is a namespace wired to the node by a veth pair.
type peer struct {
	ns               *ns.NetNS
	nodeIP, peerIP   net.IP
	nodeIP6, peerIP6 net.IP
}

// newPeer makes a namespace linked to the node by veth nodeIf, with
// 192.0.2.x/24 and 2001:db8:x::/64 on both ends, the node's end as the
// peer's default route.
func newPeer(t testing.TB, nodeIf string, x int) *peer {
	t.Helper()
	p := &peer{ns: sandbox.NewNS(t),
		nodeIP: net.ParseIP(fmt.Sprintf("192.0.%d.1", x)), peerIP: net.ParseIP(fmt.Sprintf("192.0.%d.2", x)),
		nodeIP6: net.ParseIP(fmt.Sprintf("2001:db8:%d::1", x)), peerIP6: net.ParseIP(fmt.Sprintf("2001:db8:%d::2", x))}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nodeIf}, PeerName: nodeIf + "p", PeerNamespace: netlink.NsFd(int(p.ns.Fd()))}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth %s: %v", nodeIf, err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	setup := func(name string, ip4, ip6 net.IP, gw4, gw6 net.IP) error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		for _, a := range []*netlink.Addr{
			{IPNet: &net.IPNet{IP: ip4, Mask: net.CIDRMask(24, 32)}},
			{IPNet: &net.IPNet{IP: ip6, Mask: net.CIDRMask(64, 128)}, Flags: 0x02 /* IFA_F_NODAD */},
		} {
			if err := netlink.AddrAdd(l, a); err != nil {
				return err
			}
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		for _, gw := range []net.IP{gw4, gw6} {
			if gw != nil {
				if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := setup(nodeIf, p.nodeIP, p.nodeIP6, nil, nil); err != nil {
		t.Fatalf("node end of %s: %v", nodeIf, err)
	}
	if err := p.ns.Do(func() error { return setup(nodeIf+"p", p.peerIP, p.peerIP6, p.nodeIP, p.nodeIP6) }); err != nil {
		t.Fatalf("peer end of %s: %v", nodeIf, err)
	}
	return p
}

// ruleset returns nft list ruleset of the node (iptables-nft rules too).
func ruleset(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return string(out)
}

// ownerRules returns the lines of the ruleset that belong to a portmap
// attachment of ours.
func ownerRules(t testing.TB) []string {
	var out []string
	for _, l := range strings.Split(ruleset(t), "\n") {
		if strings.Contains(l, "CNIS-DN-") || strings.Contains(l, "CNIS-HM-") ||
			strings.Contains(l, "jump pm-") || strings.Contains(l, "jump pmq-") || strings.Contains(l, `comment "cnisuite `) ||
			strings.Contains(l, `comment "pm-`) || strings.Contains(l, `comment "pmq-`) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
