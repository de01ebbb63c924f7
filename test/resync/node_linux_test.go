package resync

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/test/sandbox"
)

// node is a bridge + host-local + portmap network driven through libcni in
// the test's namespace (the node), with a peer namespace outside it.
type node struct {
	name string
	rt   *libcni.CNIConfig
	list *libcni.NetworkConfigList
	peer *peer
	t    *testing.T
}

// pod is one attached container namespace, serving its ID on TCP port 80.
type pod struct {
	id   string
	ns   *ns.NetNS
	rc   *libcni.RuntimeConf
	addr net.IP
}

func newNode(t *testing.T, backend string, i int) *node {
	br := fmt.Sprintf("rsbr%d", i)
	bkey, pkey := "", ""
	if backend != "" {
		bkey = fmt.Sprintf(`"ipMasqBackend":%q,`, backend)
		pkey = fmt.Sprintf(`"backend":%q,`, backend)
	}
	name := fmt.Sprintf("resync%d", i)
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"plugins":[
	  {"type":"bridge","bridge":%q,"isGateway":true,"isDefaultGateway":true,"ipMasq":true,"hairpinMode":true,"macspoofchk":true,%s
	   "ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.%d.0.0/24"}]]}},
	  {"type":"portmap",%s"capabilities":{"portMappings":true}}]}`,
		name, br, bkey, t.TempDir(), 100+i, pkey)
	sandbox.RemoveLinkAtEnd(t, br)
	return &node{name: name, rt: sandbox.Runtime(t), list: sandbox.ConfList(t, conf), peer: newPeer(t, fmt.Sprintf("rsup%d", i), 10+i), t: t}
}

// add attaches a fresh namespace with host port 8080 → 80.
func (n *node) add(id string) *pod { return n.addPort(id, 8080) }

// addPort attaches a fresh namespace with hostPort → 80.
func (n *node) addPort(id string, hostPort int) *pod {
	t := n.t
	p := &pod{id: id, ns: sandbox.NewNS(t)}
	p.rc = &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: p.ns.Path(),
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}}}}
	out, err := n.rt.AddNetworkList(context.Background(), n.list, p.rc)
	if err != nil {
		t.Fatalf("ADD %s: %v", id, err)
	}
	data, _ := json.Marshal(out)
	res, err := types.DecodeResult(data, n.list.CNIVersion)
	if err != nil || len(res.IPs) == 0 {
		t.Fatalf("ADD %s result %s: %v", id, data, err)
	}
	p.addr = res.IPs[0].Address.IP
	// A second DEL is success: the test's own DEL comes first.
	t.Cleanup(func() { _ = n.rt.DelNetworkList(context.Background(), n.list, p.rc) })
	sandbox.Serve(t, p.ns, "tcp4", ":80", func(net.Conn) string { return id })
	return p
}

func (n *node) status(ctx context.Context) error { return n.rt.GetStatusNetworkList(ctx, n.list) }

// wantConnected checks the host port from the peer and the masquerade of
// the pod's egress: the peer's server sees the node's address.
func (n *node) wantConnected(p *pod, when string) {
	t := n.t
	t.Helper()
	if got, err := ask(n.peer.ns, n.peer.nodeIP, 8080); err != nil || got != p.id {
		t.Errorf("%s: host port %s:8080 from outside answered %q, %v; want %s", when, n.peer.nodeIP, got, err, p.id)
	}
	if got, err := ask(p.ns, n.peer.peerIP, 9000); err != nil || got != n.peer.nodeIP.String() {
		t.Errorf("%s: the server outside saw the pod come from %q, %v; want the node's %s (masquerade)", when, got, err, n.peer.nodeIP)
	}
}

// ask connects from namespace from to ip:port and returns the answer.
func ask(from *ns.NetNS, ip net.IP, port int) (string, error) {
	var answer string
	err := from.Do(func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(port)), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		k, err := c.Read(buf)
		answer = string(buf[:k])
		if err != nil && k > 0 {
			err = nil
		}
		return err
	})
	return answer, err
}

// peer is a namespace outside the node, wired to it by a veth pair, with a
// server on port 9000 answering the source address it sees.
type peer struct {
	ns             *ns.NetNS
	nodeIP, peerIP net.IP
}

func newPeer(t *testing.T, nodeIf string, x int) *peer {
	t.Helper()
	p := &peer{ns: sandbox.NewNS(t), nodeIP: net.ParseIP(fmt.Sprintf("192.0.%d.1", x)).To4(), peerIP: net.ParseIP(fmt.Sprintf("192.0.%d.2", x)).To4()}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nodeIf}, PeerName: nodeIf + "p", PeerNamespace: netlink.NsFd(int(p.ns.Fd()))}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth %s: %v", nodeIf, err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	setup := func(name string, ip, gw net.IP) error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}}); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		if gw == nil {
			return nil
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw})
	}
	if err := setup(nodeIf, p.nodeIP, nil); err != nil {
		t.Fatalf("node end of %s: %v", nodeIf, err)
	}
	if err := p.ns.Do(func() error { return setup(nodeIf+"p", p.peerIP, p.nodeIP) }); err != nil {
		t.Fatalf("peer end of %s: %v", nodeIf, err)
	}
	sandbox.Serve(t, p.ns, "tcp4", ":9000", func(c net.Conn) string {
		host, _, _ := strings.Cut(c.RemoteAddr().String(), ":")
		return host
	})
	return p
}
