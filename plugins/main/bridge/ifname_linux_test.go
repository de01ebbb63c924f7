package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// TestIfnameTakenInContainer: when the container already has an interface
// called CNI_IFNAME, ADD fails with code 4 naming CNI_IFNAME and leaves
// nothing: no host veth, no new link in the container; the container's own
// interface is untouched. The next ADD under a free name works.
func TestIfnameTakenInContainer(t *testing.T) {
	n := newNet(t, "1.0.0", "bifname0", `"isGateway":true`, hostLocal(t, "10.96.7.0/24"))
	c := &ctr{id: "taken", ns: nsWithLink(t, "eth0")}
	c.rc = n.runtimeConf("taken", c.ns)
	before := hostLinkNames(t)
	_, err := n.tryAdd(c.rc)
	var e *types.Error
	if !errors.As(err, &e) || e.Code != 4 || !strings.Contains(e.Msg, `CNI_IFNAME "eth0"`) {
		t.Fatalf("ADD into a container holding eth0: %v; want code 4 naming CNI_IFNAME \"eth0\"", err)
	}
	if got := containerLinkNames(t, c); strings.Join(got, " ") != "eth0 lo peer0" {
		t.Errorf("container links after the failed ADD = %v, want eth0 lo peer0", got)
	}
	for name := range hostLinkNames(t) {
		if !before[name] && name != n.bridge {
			t.Errorf("host link %q left by the failed ADD", name)
		}
	}
	// The runtime's DEL after the failed ADD succeeds and leaves the
	// container's own eth0, which is not this attachment's, alone.
	if err := n.rt.DelNetworkList(context.Background(), n.list, c.rc); err != nil {
		t.Errorf("DEL after the failed ADD: %v", err)
	}
	if got := containerLinkNames(t, c); strings.Join(got, " ") != "eth0 lo peer0" {
		t.Errorf("container links after the DEL = %v, want eth0 lo peer0 (its own eth0 untouched)", got)
	}
	c.rc.IfName = "net1"
	res, err := n.tryAdd(c.rc)
	if err != nil {
		t.Fatalf("ADD as net1: %v", err)
	}
	c.res = res
	if got := containerLinkNames(t, c); strings.Join(got, " ") != "eth0 lo net1 peer0" {
		t.Errorf("container links after ADD as net1 = %v, want eth0 lo net1 peer0", got)
	}
	n.del(c)
}

// nsWithLink makes a container namespace that already holds a veth called
// name (its peer is peer0).
func nsWithLink(t *testing.T, name string) *ns.NetNS {
	t.Helper()
	netns := sandbox.NewNS(t)
	err := netns.Do(func() error {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "peer0"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return netns
}

// containerLinkNames lists the names of the container's links, sorted.
func containerLinkNames(t *testing.T, c *ctr) []string {
	t.Helper()
	var names []string
	err := c.ns.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// hostLinkNames is the set of the host namespace's link names.
func hostLinkNames(t *testing.T) map[string]bool {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range links {
		names[l.Attrs().Name] = true
	}
	return names
}
