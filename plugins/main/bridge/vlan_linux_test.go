package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// The tests of this file need a kernel with bridge VLAN filtering. This
// machine kind's kernel lacks it, so here they skip; `make vmtest` runs
// them on Debian 12's own kernel (test/vm), where CNISUITE_VM=1 turns the
// skip into a failure.

var vlanProbe = sync.OnceValue(vlanSupport)

// requireVLAN skips the test on a kernel without bridge VLAN filtering, or
// fails it inside the VM, where the kernel must have it.
func requireVLAN(t *testing.T) {
	t.Helper()
	sandbox.Require(t)
	err := vlanProbe()
	switch {
	case err == nil:
	case os.Getenv("CNISUITE_VM") == "1":
		t.Fatalf("the VM's kernel must have bridge VLAN filtering: %v", err)
	default:
		t.Skipf("skipping: %v (`make vmtest` runs this test on Debian 12's kernel)", err)
	}
}

// vlanIPAM is a host-local ipam object handing out subnet's addresses from
// start on, so that two networks can share a subnet without clashing.
func vlanIPAM(t *testing.T, subnet, start string) string {
	return fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q,"rangeStart":%q}]]}`,
		t.TempDir(), subnet, start)
}

// vlanTable renders the VLANs of a host port as "10 pvid untagged,20,...".
func vlanTable(t *testing.T, port string) string {
	t.Helper()
	got, err := link.PortVlans(nil, hostLink(t, port))
	if err != nil {
		t.Fatalf("PortVlans(%q) = %v", port, err)
	}
	var parts []string
	for _, v := range got {
		s := fmt.Sprint(v.VID)
		if v.PVID {
			s += " pvid"
		}
		if v.Untagged {
			s += " untagged"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func wantVlans(t *testing.T, c *ctr, want string) {
	t.Helper()
	port := c.res.Interfaces[ifHost].Name
	if got := vlanTable(t, port); got != want {
		t.Errorf("VLANs of port %s (%s) = %q, want %q", port, c.id, got, want)
	}
}

// mustReach fails the test unless a TCP connection from one namespace to a
// listener on addr in the other succeeds (nil = the test's namespace).
func mustReach(t *testing.T, what string, from, to *ns.NetNS, addr net.IP) {
	t.Helper()
	if err := reach(from, to, addr); err != nil {
		t.Errorf("%s: connecting to %v: %v, want a connection", what, addr, err)
	}
}

// mustNotReach fails the test when a TCP connection to a listener on addr
// succeeds within 2 s: frames of another VLAN must not arrive.
func mustNotReach(t *testing.T, what string, from, to *ns.NetNS, addr net.IP) {
	t.Helper()
	var l net.Listener
	err := in(to, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
		return err
	})
	if err != nil {
		t.Fatalf("%s: listening on %v: %v", what, addr, err)
	}
	defer l.Close()
	err = in(from, func() error {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		t.Errorf("%s: connected to %v, want no connection across VLANs", what, addr)
	}
}

// addVlanIface gives the container a tagged interface eth0.<vid> with addr.
//
// Equivalent to: ip link add link eth0 name eth0.$vid type vlan id $vid;
// ip addr add $addr dev eth0.$vid; ip link set eth0.$vid up
func addVlanIface(t *testing.T, c *ctr, vid int, addr string) {
	t.Helper()
	err := c.ns.Do(func() error {
		parent, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = fmt.Sprintf("eth0.%d", vid)
		attrs.ParentIndex = parent.Attrs().Index
		v := &netlink.Vlan{LinkAttrs: attrs, VlanId: vid}
		if err := netlink.LinkAdd(v); err != nil {
			return err
		}
		a, err := netlink.ParseAddr(addr)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(v, a); err != nil {
			return err
		}
		return netlink.LinkSetUp(v)
	})
	if err != nil {
		t.Fatalf("eth0.%d in %s: %v", vid, c.id, err)
	}
}

// TestVLANAccess: containers of one access VLAN talk, containers of two
// VLANs sharing a subnet do not, and an untagged port of default VLAN 1
// reaches none of them, since their VLAN 1 is removed.
func TestVLANAccess(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br, subnet = "bvacc", "10.71.0.0/24"
	n100 := newNet(t, "1.0.0", br, `"vlan":100`, vlanIPAM(t, subnet, "10.71.0.10"))
	a1, a2 := n100.add("a1"), n100.add("a2")
	n200 := newNet(t, "1.0.0", br, `"vlan":200`, vlanIPAM(t, subnet, "10.71.0.100"))
	b1, b2 := n200.add("b1"), n200.add("b2")
	plain := newNet(t, "1.0.0", br, ``, vlanIPAM(t, subnet, "10.71.0.200"))
	p := plain.add("p")

	wantVlans(t, a1, "100 pvid untagged")
	wantVlans(t, b1, "200 pvid untagged")
	wantVlans(t, p, "1 pvid untagged")
	mustReach(t, "VLAN 100 to VLAN 100", a1.ns, a2.ns, a2.addr(4))
	mustReach(t, "VLAN 200 to VLAN 200", b2.ns, b1.ns, b1.addr(4))
	mustNotReach(t, "VLAN 100 to VLAN 200", a1.ns, b1.ns, b1.addr(4))
	mustNotReach(t, "VLAN 200 to VLAN 100", b2.ns, a2.ns, a2.addr(4))
	mustNotReach(t, "VLAN 1 to VLAN 100", p.ns, a1.ns, a1.addr(4))
	if datagramArrives(t, p, a1) {
		t.Errorf("a datagram from VLAN 1 reached a VLAN 100 port, whose VLAN 1 should be removed")
	}
}

// TestVLANPreserveDefault reads the port's VLAN table for each combination
// of vlan, vlanTrunk and preserveDefaultVlan.
func TestVLANPreserveDefault(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	tests := []struct{ name, extra, want string }{
		{"access", `"vlan":100`, "100 pvid untagged"},
		{"access_preserved", `"vlan":100,"preserveDefaultVlan":true`, "1 untagged,100 pvid untagged"},
		{"trunk", `"vlanTrunk":[{"id":20}]`, "1 pvid untagged,20"},
		{"trunk_preserved", `"vlanTrunk":[{"id":20}],"preserveDefaultVlan":true`, "1 pvid untagged,20"},
		{"both_preserved", `"vlan":7,"vlanTrunk":[{"minID":8,"maxID":9}],"preserveDefaultVlan":true`, "1 untagged,7 pvid untagged,8,9"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNet(t, "1.0.0", fmt.Sprintf("bvpd%d", i), tt.extra, "{}")
			wantVlans(t, n.add("pd"), tt.want)
		})
	}
}

// TestVLANTrunk: a trunk port with an access (native) VLAN carries its
// trunk VLANs tagged — single IDs and ranges — and no other: a container
// with eth0.<vid> interfaces talks to access ports of VLANs 20 and 31 and
// untagged to VLAN 10, but not to VLAN 40.
func TestVLANTrunk(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br = "bvtrk"
	trunk := newNet(t, "1.0.0", br, `"vlan":10,"vlanTrunk":[{"id":20},{"minID":30,"maxID":31},{"id":20}]`,
		vlanIPAM(t, "10.72.10.0/24", "10.72.10.10"))
	tr := trunk.add("trunk")
	wantVlans(t, tr, "10 pvid untagged,20,30,31")
	for _, vid := range []int{20, 31, 40} {
		addVlanIface(t, tr, vid, fmt.Sprintf("10.72.%d.10/24", vid))
	}
	access := map[int]*ctr{}
	for _, vid := range []int{10, 20, 31, 40} {
		n := newNet(t, "1.0.0", br, fmt.Sprintf(`"vlan":%d`, vid),
			vlanIPAM(t, fmt.Sprintf("10.72.%d.0/24", vid), fmt.Sprintf("10.72.%d.100", vid)))
		access[vid] = n.add(fmt.Sprintf("access%d", vid))
	}
	mustReach(t, "native VLAN 10, untagged", access[10].ns, tr.ns, tr.addr(4))
	mustReach(t, "trunk VLAN 20", access[20].ns, tr.ns, net.ParseIP("10.72.20.10"))
	mustReach(t, "trunk VLAN 31 (of range 30-31)", access[31].ns, tr.ns, net.ParseIP("10.72.31.10"))
	mustNotReach(t, "VLAN 40, not on the trunk", access[40].ns, tr.ns, net.ParseIP("10.72.40.10"))
}

// TestVLANTrunkDefaultNative: a trunk without vlan has VLAN 1 as its native
// VLAN, so it talks untagged to a plain port of the bridge and tagged to an
// access port of its trunk VLAN.
func TestVLANTrunkDefaultNative(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br = "bvnat"
	trunk := newNet(t, "1.0.0", br, `"vlanTrunk":[{"id":20}]`, vlanIPAM(t, "10.73.1.0/24", "10.73.1.10"))
	tr := trunk.add("trunk")
	wantVlans(t, tr, "1 pvid untagged,20")
	addVlanIface(t, tr, 20, "10.73.20.10/24")
	p := newNet(t, "1.0.0", br, ``, vlanIPAM(t, "10.73.1.0/24", "10.73.1.100")).add("plain")
	a20 := newNet(t, "1.0.0", br, `"vlan":20`, vlanIPAM(t, "10.73.20.0/24", "10.73.20.100")).add("access20")
	mustReach(t, "native VLAN 1, untagged", p.ns, tr.ns, tr.addr(4))
	mustReach(t, "trunk VLAN 20", a20.ns, tr.ns, net.ParseIP("10.73.20.10"))
}

// TestVLANGateway: with isGateway the gateway address lives on
// <bridge>.<vlan>, an access port of the VLAN, listed as the fourth result
// interface; the container reaches it, a container of another VLAN in the
// same subnet does not, and the bridge itself carries no address.
func TestVLANGateway(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br, gwName = "bvgw", "bvgw.100"
	sandbox.RemoveLinkAtEnd(t, gwName)
	gwNet := newNet(t, "1.0.0", br, `"vlan":100,"isGateway":true`, vlanIPAM(t, "10.74.0.0/24", "10.74.0.10"))
	c := gwNet.add("gw")
	other := newNet(t, "1.0.0", br, `"vlan":200`, vlanIPAM(t, "10.74.0.0/24", "10.74.0.100")).add("other")

	if len(c.res.Interfaces) != 4 || c.res.Interfaces[3].Name != gwName {
		t.Fatalf("result interfaces = %+v, want a fourth one named %s", c.res.Interfaces, gwName)
	}
	if got := bridgeAddrs(t, gwName); !slices.Contains(got, "10.74.0.1/24") {
		t.Errorf("addresses of %s = %v, want 10.74.0.1/24", gwName, got)
	}
	if got := bridgeAddrs(t, br); len(got) != 0 {
		t.Errorf("addresses of bridge %s = %v, want none", br, got)
	}
	peer := gatewayPort(t, br, gwName)
	if got := vlanTable(t, peer); got != "100 pvid untagged" {
		t.Errorf("VLANs of the gateway port %s = %q, want %q", peer, got, "100 pvid untagged")
	}
	gw := net.ParseIP("10.74.0.1")
	mustReach(t, "container to its VLAN gateway", c.ns, nil, gw)
	mustNotReach(t, "VLAN 200 to VLAN 100's gateway", other.ns, nil, gw)
}

// gatewayPort returns the bridge port that is the veth peer of gwName.
func gatewayPort(t *testing.T, br, gwName string) string {
	t.Helper()
	gw, ok := hostLink(t, gwName).(*netlink.Veth)
	if !ok {
		t.Fatalf("%s is not a veth", gwName)
	}
	peer, err := netlink.VethPeerIndex(gw)
	if err != nil {
		t.Fatalf("peer of %s: %v", gwName, err)
	}
	for _, name := range bridgePorts(t, br) {
		if hostLink(t, name).Attrs().Index == peer {
			return name
		}
	}
	t.Fatalf("the peer of %s (index %d) is not a port of %s", gwName, peer, br)
	return ""
}

// TestVLANCheck: CHECK passes after ADD, fails when a trunk VLAN was
// removed from the port or when VLAN 1 came back, and passes again once
// the table is as configured.
func TestVLANCheck(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	n := newNet(t, "1.0.0", "bvchk", `"vlan":100,"vlanTrunk":[{"id":20},{"id":30}]`, "{}")
	c := n.add("chk")
	port := hostLink(t, c.res.Interfaces[ifHost].Name)
	if err := n.check(c); err != nil {
		t.Fatalf("CHECK after ADD = %v", err)
	}
	if err := netlink.BridgeVlanDel(port, 20, false, false, false, true); err != nil {
		t.Fatalf("bridge vlan del vid 20: %v", err)
	}
	if err := n.check(c); err == nil || !strings.Contains(err.Error(), "VLAN 20") {
		t.Errorf("CHECK without VLAN 20 = %v, want an error naming VLAN 20", err)
	}
	if err := netlink.BridgeVlanAdd(port, 20, false, false, false, true); err != nil {
		t.Fatalf("bridge vlan add vid 20: %v", err)
	}
	if err := n.check(c); err != nil {
		t.Errorf("CHECK with VLAN 20 back = %v, want success", err)
	}
	if err := netlink.BridgeVlanAdd(port, 1, false, false, false, true); err != nil {
		t.Fatalf("bridge vlan add vid 1: %v", err)
	}
	if err := n.check(c); err == nil || !strings.Contains(err.Error(), "VLAN 1 ") {
		t.Errorf("CHECK with VLAN 1 on the port = %v, want an error naming VLAN 1", err)
	}
}

// TestVLANDel: DEL removes the port and with it every VLAN entry of it;
// the VLAN gateway interface and its port stay, as in the reference plugin.
func TestVLANDel(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br, gwName = "bvdel", "bvdel.100"
	sandbox.RemoveLinkAtEnd(t, gwName)
	n := newNet(t, "1.0.0", br, `"vlan":100,"vlanTrunk":[{"minID":200,"maxID":202}],"isGateway":true`,
		vlanIPAM(t, "10.75.0.0/24", "10.75.0.10"))
	c := n.add("del")
	port := hostLink(t, c.res.Interfaces[ifHost].Name).Attrs().Index
	gwPort := gatewayPort(t, br, gwName)
	n.del(c)
	all, err := link.BridgeVlanList(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := all[int32(port)]; ok {
		t.Errorf("after DEL the port (index %d) still has VLANs %v", port, v)
	}
	if got := bridgePorts(t, br); !slices.Equal(got, []string{gwPort}) {
		t.Errorf("ports of %s after DEL = %v, want only the gateway port %s", br, got, gwPort)
	}
	if got := vlanTable(t, gwPort); got != "100 pvid untagged" {
		t.Errorf("VLANs of the gateway port after DEL = %q, want %q", got, "100 pvid untagged")
	}
	n.del(c) // twice is fine
}

// TestVLANPreserveDefaultTraffic: with preserveDefaultVlan an access port
// stays an untagged member of VLAN 1, so frames of a plain port reach it;
// without, they do not (only one way: its answers leave on its PVID).
func TestVLANPreserveDefaultTraffic(t *testing.T) {
	requireVLAN(t)
	t.Parallel()
	const br, subnet = "bvprs", "10.76.0.0/24"
	kept := newNet(t, "1.0.0", br, `"vlan":100,"preserveDefaultVlan":true`, vlanIPAM(t, subnet, "10.76.0.10")).add("kept")
	removed := newNet(t, "1.0.0", br, `"vlan":100`, vlanIPAM(t, subnet, "10.76.0.50")).add("removed")
	p := newNet(t, "1.0.0", br, ``, vlanIPAM(t, subnet, "10.76.0.100")).add("plain")
	if !datagramArrives(t, p, kept) {
		t.Errorf("a datagram from VLAN 1 did not reach the port that preserves VLAN 1")
	}
	if datagramArrives(t, p, removed) {
		t.Errorf("a datagram from VLAN 1 reached a port whose VLAN 1 was removed")
	}
}

// datagramArrives sends UDP datagrams from one container to another's
// address and MAC (a permanent neighbour entry, so no answer is needed) and
// reports whether one arrived within 2 s.
func datagramArrives(t *testing.T, from, to *ctr) bool {
	t.Helper()
	dst := to.addr(4)
	mac, err := net.ParseMAC(to.res.Interfaces[ifContainer].Mac)
	if err != nil {
		t.Fatalf("MAC of %s: %v", to.id, err)
	}
	var conn net.PacketConn
	if err := to.ns.Do(func() (err error) { conn, err = net.ListenPacket("udp4", dst.String()+":0"); return err }); err != nil {
		t.Fatalf("listening in %s: %v", to.id, err)
	}
	defer conn.Close()
	err = from.ns.Do(func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		neigh := &netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT, IP: dst, HardwareAddr: mac}
		if err := netlink.NeighSet(neigh); err != nil {
			return err
		}
		c, err := net.Dial("udp4", conn.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		for range 3 {
			if _, err := c.Write([]byte("vlan")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sending from %s: %v", from.id, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second)) // a fresh socket: cannot fail
	_, _, err = conn.ReadFrom(make([]byte, 16))
	return err == nil
}
