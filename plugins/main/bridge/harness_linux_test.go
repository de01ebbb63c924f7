package main

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

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/test/sandbox"
)

// testNet is one network configuration driven through libcni, with its own
// bridge and lease directory.
type testNet struct {
	t      testing.TB
	rt     *libcni.CNIConfig
	list   *libcni.NetworkConfigList
	bridge string
}

// ctr is one container attached by a test.
type ctr struct {
	id  string
	ns  *ns.NetNS
	rc  *libcni.RuntimeConf
	res *types.Result
}

// newNet builds a one-plugin conflist at version with bridge name br; extra
// holds further keys of the bridge object (JSON members, no braces) and ipam
// the ipam object ("" for none).
func newNet(t testing.TB, version, br, extra, ipam string) *testNet {
	t.Helper()
	sandbox.Require(t)
	members := []string{`"type":"bridge"`, fmt.Sprintf(`"bridge":%q`, br)}
	if extra != "" {
		members = append(members, extra)
	}
	if ipam != "" {
		members = append(members, `"ipam":`+ipam)
	}
	conf := fmt.Sprintf(`{"cniVersion":%q,"name":"net-%s","plugins":[{%s}]}`, version, br, strings.Join(members, ","))
	sandbox.RemoveLinkAtEnd(t, br)
	return &testNet{t: t, rt: sandbox.Runtime(t), list: sandbox.ConfList(t, conf), bridge: br}
}

// hostLocal returns a host-local ipam object over the given subnets, one
// range set each, with leases in a directory of the test's own.
func hostLocal(t testing.TB, subnets ...string) string {
	var sets []string
	for _, s := range subnets {
		sets = append(sets, fmt.Sprintf(`[{"subnet":%q}]`, s))
	}
	return fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[%s]}`, t.TempDir(), strings.Join(sets, ","))
}

func (n *testNet) runtimeConf(id string, netns *ns.NetNS) *libcni.RuntimeConf {
	rc := &libcni.RuntimeConf{ContainerID: id, IfName: "eth0"}
	if netns != nil {
		rc.NetNS = netns.Path()
	}
	return rc
}

// add makes a container namespace and attaches it.
func (n *testNet) add(id string) *ctr {
	n.t.Helper()
	c := &ctr{id: id, ns: sandbox.NewNS(n.t)}
	c.rc = n.runtimeConf(id, c.ns)
	res, err := n.tryAdd(c.rc)
	if err != nil {
		n.t.Fatalf("ADD %s: %v", id, err)
	}
	c.res = res
	n.t.Cleanup(func() { _ = n.rt.DelNetworkList(context.Background(), n.list, c.rc) })
	return c
}

func (n *testNet) tryAdd(rc *libcni.RuntimeConf) (*types.Result, error) {
	out, err := n.rt.AddNetworkList(context.Background(), n.list, rc)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return types.DecodeResult(data, n.list.CNIVersion)
}

func (n *testNet) del(c *ctr) {
	n.t.Helper()
	if err := n.rt.DelNetworkList(context.Background(), n.list, c.rc); err != nil {
		n.t.Fatalf("DEL %s: %v", c.id, err)
	}
}

func (n *testNet) check(c *ctr) error {
	return n.rt.CheckNetworkList(context.Background(), n.list, c.rc)
}

// addr returns the container's first address of the family (4 or 6).
func (c *ctr) addr(family int) net.IP {
	for _, ip := range c.res.IPs {
		if (ip.Address.IP.To4() != nil) == (family == 4) {
			return ip.Address.IP
		}
	}
	return nil
}

// reach opens a TCP connection from namespace from to a listener on addr in
// namespace to (nil = the test's own namespace, the "host"). The dial waits
// up to 10 s: once, in a full run, the 3 s it used to allow (one SYN
// retransmit) was not enough.
func reach(from, to *ns.NetNS, addr net.IP) error {
	return tcp(from, to, addr, 0, 10*time.Second)
}

func in(n *ns.NetNS, fn func() error) error {
	if n == nil {
		return fn()
	}
	return n.Do(fn)
}

// hostLink reads a link of the test's namespace or fails the test.
func hostLink(t testing.TB, name string) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("LinkByName(%q) = %v", name, err)
	}
	return l
}

// bridgePorts lists the names of the bridge's ports.
func bridgePorts(t testing.TB, br string) []string {
	t.Helper()
	b := hostLink(t, br)
	links, err := link.LinkList(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if l.Attrs().MasterIndex == b.Attrs().Index {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// bridgeAddrs lists the global addresses of a link of the test's namespace.
func bridgeAddrs(t testing.TB, name string) []string {
	t.Helper()
	addrs, err := link.AddrList(nil, hostLink(t, name), netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if a.IP.IsGlobalUnicast() {
			out = append(out, a.IPNet.String())
		}
	}
	return out
}

func netlinkLinkByName(name string) (netlink.Link, error) { return netlink.LinkByName(name) }
