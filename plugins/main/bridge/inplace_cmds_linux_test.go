package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
	"cnisuite/test/sandbox"
	"cnisuite/test/userns"
)

// The plugin's commands called in this process (inplace_linux_test.go):
// what ADD, CHECK, DEL, GC and STATUS leave on the node and in the
// container, as a user reads it with ip, nft and /proc/sys.

// TestInplaceGatewayMasq: a dual-stack ADD with isDefaultGateway, ipMasq
// and macspoofchk makes the bridge with both gateways, a port of it, the
// container's addresses, MTU and default routes, turns forwarding on and
// writes the masquerade and spoof-check rules; the container reaches its
// gateway. CHECK passes, and fails once the container loses its address;
// DEL removes the veth, the lease and the rules, and a second DEL is fine.
func TestInplaceGatewayMasq(t *testing.T) {
	data := t.TempDir()
	in := newInplace(t, fmt.Sprintf(`{"cniVersion":"1.1.0","name":"inpl-gw","type":"bridge","bridge":"binpl0",
		"isDefaultGateway":true,"ipMasq":true,"macspoofchk":true,"mtu":1400,
		"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.233.1.0/24"}],[{"subnet":"fd33:1::/64"}]]}}`, data))
	c := userns.NodeNS(t)
	res := in.mustAdd("inpl-gw-a", c)

	if got := bridgeAddrs(t, "binpl0"); !slices.Equal(got, []string{"10.233.1.1/24", "fd33:1::1/64"}) {
		t.Errorf("bridge addresses = %v, want the gateways 10.233.1.1/24 fd33:1::1/64", got)
	}
	if len(res.Interfaces) != 3 || res.Interfaces[ifHost].Name == "" {
		t.Fatalf("result interfaces = %+v, want bridge, host veth, container", res.Interfaces)
	}
	hostVeth := res.Interfaces[ifHost].Name
	if ports := bridgePorts(t, "binpl0"); !slices.Equal(ports, []string{hostVeth}) {
		t.Errorf("ports of binpl0 = %v, want [%s]", ports, hostVeth)
	}
	if mac := hostLink(t, "binpl0").Attrs().HardwareAddr.String(); res.Interfaces[ifBridge].Mac != mac {
		t.Errorf("result's bridge MAC %s, the link has %s", res.Interfaces[ifBridge].Mac, mac)
	}
	ctr, ok := containerSide(t, c)
	if !ok {
		t.Fatal("no eth0 in the container after ADD")
	}
	wantAddrs := []string{"10.233.1.2/24", "fd33:1::2/64"}
	if !ctr.up || ctr.mtu != 1400 || !slices.Equal(ctr.addrs, wantAddrs) {
		t.Errorf("container eth0: up %v, mtu %d, addresses %v; want up, 1400, %v", ctr.up, ctr.mtu, ctr.addrs, wantAddrs)
	}
	if want := []string{"default via 10.233.1.1", "default via fd33:1::1"}; !slices.Equal(ctr.routes, want) {
		t.Errorf("container default routes = %v, want %v", ctr.routes, want)
	}
	for _, key := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if v := procSys(t, key); v != "1" {
			t.Errorf("%s = %s after ADD with isGateway, want 1", key, v)
		}
	}
	rules := ruleset(t)
	for _, want := range []string{"10.233.1.2", "fd33:1::2", ctr.mac} {
		if !strings.Contains(rules, want) {
			t.Errorf("nft list ruleset does not name %s after ADD:\n%s", want, rules)
		}
	}
	if err := reach(c, nil, net.ParseIP("10.233.1.1")); err != nil {
		t.Errorf("container → gateway 10.233.1.1: %v", err)
	}

	if err := in.check("inpl-gw-a", c, res); err != nil {
		t.Errorf("CHECK after ADD: %v", err)
	}
	removeContainerAddr(t, c, "10.233.1.2/24")
	if err := in.check("inpl-gw-a", c, res); err == nil {
		t.Error("CHECK passed with the container's IPv4 address gone")
	}

	if err := in.del("inpl-gw-a", c, res); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if _, ok := containerSide(t, c); ok {
		t.Error("the container still has eth0 after DEL")
	}
	if _, err := netlink.LinkByName(hostVeth); err == nil {
		t.Errorf("host veth %s still there after DEL", hostVeth)
	}
	if _, err := os.Stat(filepath.Join(data, "inpl-gw", "10.233.1.2")); !os.IsNotExist(err) {
		t.Errorf("lease 10.233.1.2 still held after DEL (%v)", err)
	}
	if rules := ruleset(t); strings.Contains(rules, "10.233.1.2") || strings.Contains(rules, ctr.mac) {
		t.Errorf("nft list ruleset still names the container after DEL:\n%s", rules)
	}
	if err := in.del("inpl-gw-a", c, res); err != nil {
		t.Errorf("second DEL: %v", err)
	}
}

// TestInplaceLayer2: without IPAM the container's eth0 is up with no
// address, the bridge has none, and forwarding is not touched; CHECK
// passes; DEL with removeEmptyBridge takes the bridge with its last port.
func TestInplaceLayer2(t *testing.T) {
	in := newInplace(t, `{"cniVersion":"1.0.0","name":"inpl-l2","type":"bridge","bridge":"binpl1","removeEmptyBridge":true}`)
	c := userns.NodeNS(t)
	res := in.mustAdd("inpl-l2-a", c)
	ctr, ok := containerSide(t, c)
	if !ok || !ctr.up || len(ctr.addrs) != 0 {
		t.Errorf("container eth0 = %+v (present %v), want up without addresses", ctr, ok)
	}
	if got := bridgeAddrs(t, "binpl1"); len(got) != 0 {
		t.Errorf("bridge addresses = %v, want none", got)
	}
	if err := in.check("inpl-l2-a", c, res); err != nil {
		t.Errorf("CHECK: %v", err)
	}
	if err := in.del("inpl-l2-a", c, res); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if _, err := netlink.LinkByName("binpl1"); err == nil {
		t.Error("bridge binpl1 still there after its last port's DEL with removeEmptyBridge")
	}
}

// TestInplaceRefusals: what ADD refuses leaves nothing of the attachment,
// and says why with the code the runtime acts on.
func TestInplaceRefusals(t *testing.T) {
	t.Run("bridge_name_taken", func(t *testing.T) {
		in := newInplace(t, `{"cniVersion":"1.0.0","name":"inpl-taken","type":"bridge","bridge":"binpl2"}`)
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "binpl2"}, PeerName: "binpl2p"}); err != nil {
			t.Fatal(err)
		}
		_, err := in.add("inpl-taken-a", userns.NodeNS(t))
		if cniCode(err) != types.CodeInvalidConfig || !strings.Contains(fmt.Sprint(err), `bridge "binpl2"`) {
			t.Errorf("ADD with bridge name held by a veth = %v (code %d), want code 7 naming the bridge", err, cniCode(err))
		}
		err = in.p.cmdStatus(context.Background(), in.args("STATUS", "", nil, nil))
		if cniCode(err) != types.CodeNotAvailable {
			t.Errorf("STATUS with the bridge name held by a veth = %v (code %d), want 50", err, cniCode(err))
		}
		if l, _ := netlink.LinkByName("binpl2"); l == nil || l.Type() != "veth" {
			t.Errorf("the veth binpl2 changed: %v", l)
		}
	})
	t.Run("ifname_taken", func(t *testing.T) {
		in := newInplace(t, `{"cniVersion":"1.0.0","name":"inpl-ifn","type":"bridge","bridge":"binpl3"}`)
		c := userns.NodeNS(t)
		if err := c.Do(func() error {
			return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"})
		}); err != nil {
			t.Fatal(err)
		}
		_, err := in.add("inpl-ifn-a", c)
		if cniCode(err) != types.CodeInvalidEnv {
			t.Errorf("ADD into a container holding eth0 = %v (code %d), want code 4", err, cniCode(err))
		}
		if ports := bridgePorts(t, "binpl3"); len(ports) != 0 {
			t.Errorf("ports of binpl3 after the failed ADD = %v, want none", ports)
		}
	})
}

// TestInplaceGC: GC keeps the rules and lease of the attachments it is
// told are valid and removes the others'.
func TestInplaceGC(t *testing.T) {
	data := t.TempDir()
	in := newInplace(t, fmt.Sprintf(`{"cniVersion":"1.1.0","name":"inpl-gc","type":"bridge","bridge":"binpl4","ipMasq":true,
		"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.233.4.0/24"}]]}}`, data))
	in.mustAdd("inpl-gc-keep", userns.NodeNS(t))
	in.mustAdd("inpl-gc-gone", userns.NodeNS(t))
	in.conf["cni.dev/valid-attachments"] = []map[string]string{{"containerID": "inpl-gc-keep", "ifname": "eth0"}}
	if err := in.p.cmdGC(context.Background(), in.args("GC", "", nil, nil)); err != nil {
		t.Fatalf("GC: %v", err)
	}
	rules := ruleset(t)
	if !strings.Contains(rules, "10.233.4.2") || strings.Contains(rules, "10.233.4.3") {
		t.Errorf("after GC keeping inpl-gc-keep (10.233.4.2), the ruleset is:\n%s", rules)
	}
	for ip, want := range map[string]bool{"10.233.4.2": true, "10.233.4.3": false} {
		_, err := os.Stat(filepath.Join(data, "inpl-gc", ip))
		if held := err == nil; held != want {
			t.Errorf("lease %s held after GC: %v, want %v", ip, held, want)
		}
	}
	if err := in.p.cmdStatus(context.Background(), in.args("STATUS", "", nil, nil)); err != nil {
		t.Errorf("STATUS: %v", err)
	}
}

// removeContainerAddr deletes an address of the container's eth0, as a
// user in the container would.
func removeContainerAddr(t *testing.T, n interface{ Do(func() error) error }, cidr string) {
	t.Helper()
	err := n.Do(func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		a, err := netlink.ParseAddr(cidr)
		if err != nil {
			return err
		}
		return netlink.AddrDel(l, a)
	})
	if err != nil {
		t.Fatalf("ip addr del %s dev eth0: %v", cidr, err)
	}
}

// TestInplaceMTUFromUplink: with mtuFromUplink and no mtu, the bridge made
// and both veth ends take the MTU of the interface of the default route.
func TestInplaceMTUFromUplink(t *testing.T) {
	in := newInplace(t, `{"cniVersion":"1.1.0","name":"inpl-upl","type":"bridge","bridge":"binpl5","mtuFromUplink":true}`)
	addUplink(t, "upl0", 1300)
	c := userns.NodeNS(t)
	res := in.mustAdd("inpl-upl-a", c)
	hostVeth := hostLink(t, res.Interfaces[ifHost].Name)
	ctr, _ := containerSide(t, c)
	if br := hostLink(t, "binpl5"); br.Attrs().MTU != 1300 || hostVeth.Attrs().MTU != 1300 || ctr.mtu != 1300 {
		t.Errorf("MTUs: bridge %d, host veth %d, container %d; want the uplink's 1300 each",
			br.Attrs().MTU, hostVeth.Attrs().MTU, ctr.mtu)
	}
	if res.Interfaces[ifContainer].Mtu != 1300 {
		t.Errorf("result's container mtu = %d, want 1300", res.Interfaces[ifContainer].Mtu)
	}
}

// addUplink makes the veth name (peer name+"p"), up with the given MTU, an
// address and the default route through it, removed when the test ends.
func addUplink(t *testing.T, name string, mtu int) {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: name + "p"}
	if err := netlink.LinkAdd(v); err != nil {
		t.Fatalf("ip link add %s mtu %d type veth: %v", name, mtu, err)
	}
	sandbox.RemoveLinkAtEnd(t, name)
	addr, _ := netlink.ParseAddr("192.0.2.1/24")
	l := hostLink(t, name)
	peer := hostLink(t, name+"p")
	err := errors.Join(netlink.LinkSetUp(l), netlink.LinkSetUp(peer), netlink.AddrAdd(l, addr),
		netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP("192.0.2.254")}))
	if err != nil {
		t.Fatalf("uplink %s with a default route: %v", name, err)
	}
}

// TestInplaceEnableDAD: with enabledad, ADD returns once duplicate address
// detection passed: the container's IPv6 address is no longer tentative.
func TestInplaceEnableDAD(t *testing.T) {
	data := t.TempDir()
	in := newInplace(t, fmt.Sprintf(`{"cniVersion":"1.1.0","name":"inpl-dad","type":"bridge","bridge":"binpl6","enabledad":true,
		"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"fd33:6::/64"}]]}}`, data))
	c := userns.NodeNS(t)
	in.mustAdd("inpl-dad-a", c)
	flags := inNS(t, c, func() (int, error) {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return 0, err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V6)
		for _, a := range addrs {
			if a.IP.Equal(net.ParseIP("fd33:6::2")) {
				return a.Flags, err
			}
		}
		return 0, fmt.Errorf("no fd33:6::2 on eth0 (%v, %v)", addrs, err)
	})
	if flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED|unix.IFA_F_NODAD) != 0 {
		t.Errorf("fd33:6::2 after ADD with enabledad has flags %#x, want DAD done (not tentative, not nodad)", flags)
	}
}
