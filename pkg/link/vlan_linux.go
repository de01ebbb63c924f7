package link

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/vlanplan"
)

// ApplyPortVlans programs plan on the bridge port l; h may be nil.
//
// Equivalent to: bridge vlan del dev $l vid $each_existing (when flushing);
// bridge vlan add dev $l vid $vid [pvid] [untagged] master
func ApplyPortVlans(h *netlink.Handle, l netlink.Link, plan vlanplan.Plan) error {
	h = orDefault(h)
	name := l.Attrs().Name
	if plan.Flush {
		vids, err := PortVlans(h, l)
		if err != nil {
			return err
		}
		for _, v := range vids {
			if err := h.BridgeVlanDel(l, v.VID, v.PVID, v.Untagged, false, true); err != nil && !IsNotFound(err) {
				return fmt.Errorf("port %q: removing VLAN %d: %w", name, v.VID, err)
			}
		}
	}
	for _, e := range plan.Entries {
		if err := h.BridgeVlanAdd(l, e.VID, e.PVID, e.Untagged, false, true); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				return fmt.Errorf("port %q: adding VLAN %d: %w", name, e.VID, ErrVlanUnsupported)
			}
			return fmt.Errorf("port %q: adding VLAN %d: %w", name, e.VID, err)
		}
	}
	return nil
}

// PortVlans lists the VLANs of the bridge port l; h may be nil.
//
// Equivalent to: bridge vlan show dev $l
func PortVlans(h *netlink.Handle, l netlink.Link) ([]vlanplan.Entry, error) {
	h = orDefault(h)
	all, err := BridgeVlanList(h)
	if err != nil {
		return nil, fmt.Errorf("listing bridge VLANs: %w", err)
	}
	var out []vlanplan.Entry
	for _, info := range all[int32(l.Attrs().Index)] {
		out = append(out, vlanplan.Entry{VID: info.Vid, PVID: info.PortVID(), Untagged: info.EngressUntag()})
	}
	return out, nil
}

// EnsureVlanGateway returns the host interface "<bridge>.<vlan>" that carries
// a VLAN's gateway address, creating it when missing: one end of a veth pair
// whose other end is an access port of the VLAN on the bridge.
//
// Equivalent to: ip link add $br.$vlan type veth peer name vethXXXX;
// ip link set vethXXXX master $br up; bridge vlan add dev vethXXXX vid $vlan pvid untagged master;
// ip link set $br.$vlan up
func EnsureVlanGateway(h *netlink.Handle, br netlink.Link, vlan, mtu int) (netlink.Link, error) {
	name := vlanplan.GatewayName(br.Attrs().Name, vlan)
	if l, err := h.LinkByName(name); err == nil {
		return l, nil
	}
	peer, err := RandomVethName("")
	if err != nil {
		return nil, err
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	attrs.MTU = mtu
	err = h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: peer, PeerTxQLen: -1})
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("creating VLAN gateway interface %q: %w", name, err)
	}
	if errors.Is(err, unix.EEXIST) { // a concurrent ADD made it
		return h.LinkByName(name)
	}
	return finishVlanGateway(h, br, name, peer, vlan)
}

func finishVlanGateway(h *netlink.Handle, br netlink.Link, name, peer string, vlan int) (netlink.Link, error) {
	p, err := h.LinkByName(peer)
	if err != nil {
		return nil, fmt.Errorf("reading VLAN gateway peer %q: %w", peer, err)
	}
	if err := ifconf.DisableRA(peer); err != nil {
		return nil, err
	}
	if err := AttachPort(h, p, br, PortOptions{}); err != nil {
		return nil, err
	}
	if err := ApplyPortVlans(h, p, vlanplan.ForPort(vlan, nil, false)); err != nil {
		return nil, err
	}
	gw, err := h.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("reading VLAN gateway interface %q: %w", name, err)
	}
	if err := ifconf.DisableRA(name); err != nil {
		return nil, err
	}
	if err := h.LinkSetUp(gw); err != nil {
		return nil, fmt.Errorf("setting %q up: %w", name, err)
	}
	return h.LinkByName(name)
}
