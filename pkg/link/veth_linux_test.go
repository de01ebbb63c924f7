package link

import (
	"errors"
	"net"
	"regexp"
	"testing"

	"github.com/vishvananda/netlink"
)

// CreateVeth makes the pair across two namespaces: the container end under
// its final name, MTU and MAC, the host end under the name asked for or a
// random one when that is taken, unless the exact name was asked for.
func TestCreateVeth(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:0a:01:00:05")
	tests := []struct {
		name      string
		opts      VethOptions
		hostTaken bool // a bridge of the host-side name exists
		contTaken bool // the container has eth0 already
		wantHost  string
		wantErr   error
	}{
		{name: "named", opts: VethOptions{HostName: "vhost0", MTU: 1400, MAC: mac}, wantHost: "^vhost0$"},
		{name: "random", opts: VethOptions{HostPrefix: "cni"}, wantHost: "^cni[0-9a-f]{8}$"},
		{name: "random_default_prefix", wantHost: "^veth[0-9a-f]{8}$"},
		{name: "name_taken_random_instead", opts: VethOptions{HostName: "vhost0"}, hostTaken: true, wantHost: "^veth[0-9a-f]{8}$"},
		{name: "exact_name_taken", opts: VethOptions{HostName: "vhost0", HostNameExact: true}, hostTaken: true, wantErr: ErrHostNameTaken},
		{name: "container_name_taken", opts: VethOptions{HostName: "vhost0"}, hostTaken: true, contTaken: true, wantErr: ErrContainerIfaceExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, cont := newNS(t), newNS(t)
			if tt.hostTaken {
				host.bridge(t, "vhost0")
			}
			if tt.contTaken {
				cont.veth(t, "eth0", "peer0")
			}
			o := tt.opts
			o.ContainerName, o.ContainerNS = "eth0", int(cont.Fd())
			p, err := CreateVeth(host.h, cont.h, o)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("CreateVeth() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if l, ok := show(t, cont.NetNS, "eth0"); ok && l.LinkInfo.Kind != "veth" || !tt.contTaken && ok {
					t.Errorf("after the failure the container shows %+v", l)
				}
				return
			}
			h, c := mustShow(t, host.NetNS, p.Host.Attrs().Name), mustShow(t, cont.NetNS, "eth0")
			if !regexp.MustCompile(tt.wantHost).MatchString(h.Name) || h.LinkInfo.Kind != "veth" {
				t.Errorf("host end %s of kind %s, want a veth named %s", h.Name, h.LinkInfo.Kind, tt.wantHost)
			}
			if p.Container.Attrs().Name != "eth0" || c.LinkInfo.Kind != "veth" {
				t.Errorf("container end %s (%s), want the veth eth0", p.Container.Attrs().Name, c.LinkInfo.Kind)
			}
			wantMTU := 1500
			if tt.opts.MTU != 0 {
				wantMTU = tt.opts.MTU
			}
			if h.MTU != wantMTU || c.MTU != wantMTU {
				t.Errorf("MTUs host %d, container %d, want %d", h.MTU, c.MTU, wantMTU)
			}
			if tt.opts.MAC != nil && c.Address != mac.String() {
				t.Errorf("container MAC %s, want %s", c.Address, mac)
			}
			if _, inHost := show(t, host.NetNS, "eth0"); inHost {
				t.Errorf("eth0 shows in the host namespace")
			}
		})
	}
}

// DeleteLink removes a link, and a missing one is success.
func TestDeleteLink(t *testing.T) {
	n := newNS(t)
	n.veth(t, "dum0", "dum1")
	for _, name := range []string{"dum0", "dum0", "nosuch0"} {
		if err := DeleteLink(n.h, name); err != nil {
			t.Errorf("DeleteLink(%s) = %v", name, err)
		}
	}
	for _, name := range []string{"dum0", "dum1"} {
		if _, ok := show(t, n.NetNS, name); ok {
			t.Errorf("%s still shows after DeleteLink(dum0)", name)
		}
	}
	n.do(t, func() error { // a nil handle acts where the caller is
		n.veth(t, "dum2", "dum3")
		return DeleteLink(nil, "dum2")
	})
	if _, ok := show(t, n.NetNS, "dum2"); ok {
		t.Errorf("dum2 still shows after DeleteLink(nil, dum2) inside its namespace")
	}
}

// AttachPort makes the veth a port of the bridge with the flags asked
// for, and up; a master that is no bridge is an error naming both.
func TestAttachPort(t *testing.T) {
	for _, o := range []PortOptions{{}, {Hairpin: true}, {Isolated: true}, {Hairpin: true, Isolated: true}} {
		n := newNS(t)
		br, l := n.bridge(t, "br0"), n.veth(t, "dum0", "dum1")
		if err := AttachPort(n.h, l, br, o); err != nil {
			t.Fatalf("AttachPort(%+v) = %v", o, err)
		}
		got := mustShow(t, n.NetNS, "dum0")
		sd := got.LinkInfo.SlaveData
		if got.Master != "br0" || !got.up() || sd.Hairpin != o.Hairpin || sd.Isolated != o.Isolated {
			t.Errorf("AttachPort(%+v): ip shows master %q, flags %v, hairpin %v, isolated %v",
				o, got.Master, got.Flags, sd.Hairpin, sd.Isolated)
		}
	}
	n := newNS(t)
	other, l := n.veth(t, "dum2", "dum3"), n.veth(t, "dum0", "dum1")
	if err := AttachPort(n.h, l, other, PortOptions{}); err == nil {
		t.Errorf("AttachPort to the veth dum2 = nil, want an error")
	} else if msg := err.Error(); !regexp.MustCompile(`"dum0" to bridge "dum2"`).MatchString(msg) {
		t.Errorf("AttachPort to a veth: %q does not name the port and the master", msg)
	}
}

// NoLinkLocal: the port comes up without an IPv6 link-local address, and
// ip shows its address generation mode as none.
func TestNoLinkLocal(t *testing.T) {
	n := newNS(t)
	l, peer := n.veth(t, "dum0", "dum1"), n.link(t, "dum1")
	if err := NoLinkLocal(n.h, l); err != nil {
		t.Fatal(err)
	}
	for _, x := range []netlink.Link{l, peer} {
		if err := n.h.LinkSetUp(x); err != nil {
			t.Fatal(err)
		}
	}
	got, control := mustShow(t, n.NetNS, "dum0"), mustShow(t, n.NetNS, "dum1")
	if got.AddrGenMode != "none" || len(got.AddrInfo) != 0 {
		t.Errorf("dum0: addrgenmode %q, addresses %+v; want none and none", got.AddrGenMode, got.AddrInfo)
	}
	if control.AddrGenMode == "none" || len(control.AddrInfo) != 1 {
		t.Errorf("dum1 (left alone): addrgenmode %q, addresses %+v; want a link-local one", control.AddrGenMode, control.AddrInfo)
	}
	if err := NoLinkLocal(n.h, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "gone0", Index: 999}}); err == nil {
		t.Errorf("NoLinkLocal on a missing link = nil, want an error")
	}
}

// RandomVethName and RandomMAC give fresh, well-formed values each call.
func TestRandomNames(t *testing.T) {
	a, _ := RandomVethName("")
	b, _ := RandomVethName("pfx")
	if !regexp.MustCompile(`^veth[0-9a-f]{8}$`).MatchString(a) || !regexp.MustCompile(`^pfx[0-9a-f]{8}$`).MatchString(b) {
		t.Errorf("RandomVethName = %q, %q", a, b)
	}
	m1, _ := RandomMAC()
	m2, _ := RandomMAC()
	if m1[0]&1 != 0 || m1[0]&2 == 0 || m1.String() == m2.String() {
		t.Errorf("RandomMAC = %s, %s: want distinct unicast, locally administered addresses", m1, m2)
	}
}
