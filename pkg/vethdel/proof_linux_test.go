package vethdel

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

// attachment is a host namespace holding the bridge br0 with the port
// vhA, whose peer eth0 lives in the container namespace.
type attachment struct {
	host, cont *netlink.Handle
	contNS     *ns.NetNS
}

func handleIn(t *testing.T, n *ns.NetNS) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func newAttachment(t *testing.T) attachment {
	t.Helper()
	a := attachment{contNS: userns.NewNS(t)}
	a.host, a.cont = handleIn(t, userns.NewNS(t)), handleIn(t, a.contNS)
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	steps := []func() error{
		func() error { return a.host.LinkAdd(br) },
		func() error {
			return a.host.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vhA"}, PeerName: "eth0",
				PeerNamespace: netlink.NsFd(a.contNS.Fd())})
		},
		func() error {
			l, err := a.host.LinkByName("vhA")
			if err != nil {
				return err
			}
			return a.host.LinkSetMaster(l, br)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("setting up the attachment: %v", err)
		}
	}
	return a
}

// there reports whether h shows a link called name.
func there(h *netlink.Handle, name string) bool {
	_, err := h.LinkByName(name)
	return err == nil
}

// DeleteHostPort deletes a port of the bridge proven ours — by our name or
// by its peer in the container's namespace — and leaves any other link.
func TestDeleteHostPort(t *testing.T) {
	tests := []struct {
		name      string
		port      string
		byOurName bool
		bridge    string
		otherNS   bool // the pair names another namespace than the peer's
		noNS      bool // the container namespace is gone
		wantGone  bool
	}{
		{name: "our_name", port: "vhA", byOurName: true, bridge: "br0", noNS: true, wantGone: true},
		{name: "peer_in_container", port: "vhA", bridge: "br0", wantGone: true},
		{name: "peer_elsewhere", port: "vhA", bridge: "br0", otherNS: true},
		{name: "no_namespace_no_name", port: "vhA", bridge: "br0", noNS: true},
		{name: "port_of_another_bridge", port: "vhA", byOurName: true, bridge: "br1"},
		{name: "not_a_veth", port: "br0", byOurName: true, bridge: "br0"},
		{name: "missing", port: "nosuch0", byOurName: true, bridge: "br0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAttachment(t)
			p := Pair{Host: a.host, Cont: a.cont, NetNS: a.contNS, Bridge: tt.bridge}
			if tt.otherNS {
				p.NetNS = userns.NewNS(t)
			}
			if tt.noNS {
				p.NetNS, p.Cont = nil, nil
			}
			if err := p.DeleteHostPort(tt.port, tt.byOurName); err != nil {
				t.Fatalf("DeleteHostPort(%s) = %v", tt.port, err)
			}
			want := !tt.wantGone && tt.port != "nosuch0"
			if got := there(a.host, tt.port); got != want {
				t.Errorf("after DeleteHostPort, %s shows: %v, want %v", tt.port, got, want)
			}
			if tt.wantGone && there(a.cont, "eth0") {
				t.Errorf("the peer eth0 outlived its host end")
			}
		})
	}
}

// DeleteContainerEnd deletes the container's interface when its host end
// is a port of the attachment's bridge, and leaves one that is no veth;
// a missing interface or namespace is nothing to do.
func TestDeleteContainerEndProofs(t *testing.T) {
	tests := []struct {
		name     string
		ifname   string
		bridge   string
		noNS     bool
		wantGone bool
	}{
		{name: "port_of_our_bridge", ifname: "eth0", bridge: "br0", wantGone: true},
		{name: "port_of_another_bridge", ifname: "eth0", bridge: "br1"},
		{name: "not_a_veth", ifname: "lo", bridge: "br0"},
		{name: "missing", ifname: "nosuch0", bridge: "br0"},
		{name: "namespace_gone", ifname: "eth0", bridge: "br0", noNS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAttachment(t)
			p := Pair{Host: a.host, Cont: a.cont, NetNS: a.contNS, Bridge: tt.bridge}
			if tt.noNS {
				p.NetNS, p.Cont = nil, nil
			}
			if err := p.DeleteContainerEnd(tt.ifname, nil); err != nil {
				t.Fatalf("DeleteContainerEnd(%s) = %v", tt.ifname, err)
			}
			want := !tt.wantGone && tt.ifname != "nosuch0"
			if got := there(a.cont, tt.ifname); got != want {
				t.Errorf("after DeleteContainerEnd, %s shows: %v, want %v", tt.ifname, got, want)
			}
		})
	}
}
