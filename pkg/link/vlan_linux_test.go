package link

import (
	"errors"
	"testing"

	"cnisuite/pkg/vlanplan"
)

// The kernels of this machine kind lack bridge VLAN filtering: programming
// a port's VLANs says so (ErrVlanUnsupported, which the bridge plugin turns
// into its error), and there are no VLANs to list. Where the kernel has it
// (test/vm), PortVlans reads back what ApplyPortVlans programmed.
func TestPortVlans(t *testing.T) {
	n := newNS(t)
	br, l := n.bridge(t, "br0"), n.veth(t, "dum0", "dum1")
	if err := AttachPort(n.h, l, br, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	plan := vlanplan.ForPort(5, []int{7}, false)
	err := ApplyPortVlans(n.h, l, plan)
	if err != nil && !errors.Is(err, ErrVlanUnsupported) {
		t.Fatalf("ApplyPortVlans() = %v", err)
	}
	got, lerr := PortVlans(n.h, l)
	if lerr != nil {
		t.Fatalf("PortVlans() = %v", lerr)
	}
	if err != nil {
		if len(got) != 0 {
			t.Errorf("VLAN filtering unsupported, yet PortVlans() = %+v", got)
		}
		return
	}
	for _, e := range plan.Entries {
		found := false
		for _, g := range got {
			found = found || g == e
		}
		if !found {
			t.Errorf("PortVlans() = %+v, lacks %+v", got, e)
		}
	}
}

// EnsureVlanGateway makes <bridge>.<vlan>, one end of a veth pair whose
// other end is a port of the bridge; where VLAN filtering is missing it
// fails saying so, and the port it made is there for DEL to find.
func TestEnsureVlanGateway(t *testing.T) {
	n := newNS(t)
	br := n.bridge(t, "br0")
	var gwName string
	err := n.Do(func() error {
		gw, err := EnsureVlanGateway(n.h, br, 5, 1400)
		if gw != nil {
			gwName = gw.Attrs().Name
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrVlanUnsupported) {
		t.Fatalf("EnsureVlanGateway() = %v", err)
	}
	gw := mustShow(t, n.NetNS, "br0.5")
	if gw.LinkInfo.Kind != "veth" || gw.MTU != 1400 {
		t.Errorf("ip shows br0.5 as %s, mtu %d; want a veth, mtu 1400", gw.LinkInfo.Kind, gw.MTU)
	}
	if err == nil && (gwName != "br0.5" || !gw.up()) {
		t.Errorf("EnsureVlanGateway() = %q, ip shows %v; want br0.5 up", gwName, gw.Flags)
	}
	ports := 0
	for _, l := range linksOf(t, n) {
		if l.Master == "br0" {
			ports++
		}
	}
	if ports != 1 {
		t.Errorf("br0 has %d ports, want the gateway's peer alone", ports)
	}
	// A second call finds the gateway there.
	if err := n.Do(func() error { _, err := EnsureVlanGateway(n.h, br, 5, 1400); return err }); err != nil {
		t.Errorf("EnsureVlanGateway() again = %v", err)
	}
}

func linksOf(t *testing.T, n testNS) []ipLink {
	t.Helper()
	var links []ipLink
	if !ip(t, n.NetNS, &links, "link", "show") {
		t.Fatal("ip link show failed")
	}
	return links
}
