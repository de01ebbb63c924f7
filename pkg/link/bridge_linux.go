package link

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ifconf"
)

// ErrNotBridge is returned when a bridge name is taken by a link of another type.
var ErrNotBridge = errors.New("link exists but is not a bridge")

// ErrVlanUnsupported is returned when the kernel lacks bridge VLAN filtering.
var ErrVlanUnsupported = errors.New("bridge VLAN filtering is not supported by this kernel")

// BridgeOptions describes the bridge an attachment needs.
type BridgeOptions struct {
	Name          string
	MTU           int  // applied only when the bridge is created; 0 = kernel default
	Promisc       bool // turned on (never off) on every call
	VlanFiltering bool // applied only when the bridge is created
}

// EnsureBridge returns the bridge o.Name, creating it when missing. A bridge
// made by a concurrent caller is adopted. The bridge gets an explicit MAC at
// creation, so that it keeps its MAC as ports come and go; an adopted bridge
// keeps its MTU and VLAN filtering. IPv6 router advertisements are ignored on
// it (CVE-2020-10749) and it is set up.
//
// Equivalent to: ip link add $name type bridge [mtu $mtu] [vlan_filtering 1];
// sysctl net.ipv6.conf.$name.accept_ra=0; ip link set $name [promisc on] up
func EnsureBridge(h *netlink.Handle, o BridgeOptions) (*netlink.Bridge, error) {
	br, err := lookupBridge(h, o.Name)
	if errors.Is(err, errLinkNotFound) {
		br, err = createBridge(h, o)
	}
	if err != nil {
		return nil, err
	}
	changed := false
	if o.Promisc && br.Promisc == 0 {
		if err := h.SetPromiscOn(br); err != nil {
			return nil, fmt.Errorf("bridge %q: setting promisc on: %w", o.Name, err)
		}
		changed = true
	}
	if err := ifconf.DisableRA(o.Name); err != nil {
		return nil, err
	}
	if br.Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(br); err != nil {
			return nil, fmt.Errorf("bridge %q: setting up: %w", o.Name, err)
		}
		changed = true
	}
	if !changed {
		return br, nil // the common case: an existing bridge, as it was read
	}
	return lookupBridge(h, o.Name)
}

var errLinkNotFound = errors.New("link not found")

// LookupBridge returns the bridge called name. It wraps ErrNotBridge when the
// name belongs to another kind of link.
func LookupBridge(h *netlink.Handle, name string) (*netlink.Bridge, error) {
	return lookupBridge(h, name)
}

func lookupBridge(h *netlink.Handle, name string) (*netlink.Bridge, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		if IsNotFound(err) {
			return nil, fmt.Errorf("bridge %q: %w", name, errLinkNotFound)
		}
		return nil, fmt.Errorf("looking up bridge %q: %w", name, err)
	}
	br, ok := l.(*netlink.Bridge)
	if !ok {
		return nil, fmt.Errorf("%q is a %s link: %w", name, l.Type(), ErrNotBridge)
	}
	return br, nil
}

// DeleteBridgeIfNoPorts deletes the bridge called name, with its
// addresses, when no link is its port. A name that is gone or not a
// bridge is left alone.
//
// Equivalent to: [ -z "$(ip link show master $name)" ] && ip link del $name
func DeleteBridgeIfNoPorts(h *netlink.Handle, name string) error {
	br, err := lookupBridge(h, name)
	if err != nil {
		return nil // gone, or not a bridge: nothing to remove
	}
	links, err := LinkList(h)
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Index {
			return nil // a port is left
		}
	}
	if err := h.LinkDel(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Index: br.Index, Name: br.Name}}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting bridge %q: %w", br.Name, err)
	}
	return nil
}

func createBridge(h *netlink.Handle, o BridgeOptions) (*netlink.Bridge, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = o.Name
	attrs.MTU = o.MTU
	mac, err := RandomMAC()
	if err != nil {
		return nil, err
	}
	attrs.HardwareAddr = mac
	br := &netlink.Bridge{LinkAttrs: attrs}
	if o.VlanFiltering {
		on := true
		br.VlanFiltering = &on
	}
	err = h.LinkAdd(br)
	switch {
	case err == nil, errors.Is(err, unix.EEXIST):
		// EEXIST: a concurrent ADD made it first; adopt it.
		return lookupBridge(h, o.Name)
	case o.VlanFiltering && errors.Is(err, unix.EOPNOTSUPP):
		return nil, fmt.Errorf("creating bridge %q with vlan_filtering: %w", o.Name, ErrVlanUnsupported)
	}
	return nil, fmt.Errorf("creating bridge %q: %w", o.Name, err)
}

// PinMAC makes the kernel stop recomputing the bridge MAC from its ports, by
// setting it explicitly to its current value.
//
// Equivalent to: ip link set $bridge address $(current address)
func PinMAC(h *netlink.Handle, br netlink.Link) error {
	mac := br.Attrs().HardwareAddr
	if len(mac) == 0 {
		return nil
	}
	if err := h.LinkSetHardwareAddr(br, mac); err != nil {
		return fmt.Errorf("bridge %q: pinning MAC %s: %w", br.Attrs().Name, mac, err)
	}
	return nil
}

// RandomMAC returns a random unicast, locally administered MAC address.
func RandomMAC() (net.HardwareAddr, error) {
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		return nil, fmt.Errorf("generating a MAC address: %w", err)
	}
	mac[0] = mac[0]&0xfe | 0x02
	return mac, nil
}

// IsNotFound reports whether err says that a link, address or route does not exist.
func IsNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EADDRNOTAVAIL)
}

// EnsureMACPinned pins the bridge MAC (see PinMAC) unless it was already set
// explicitly: setting it again would make the kernel flush the bridge's
// neighbour entries. The kernel tells through sysfs; when sysfs shows another
// namespace than the caller's (the index differs), the MAC is pinned anyway.
func EnsureMACPinned(h *netlink.Handle, br netlink.Link) error {
	name := br.Attrs().Name
	typ, err1 := os.ReadFile("/sys/class/net/" + name + "/addr_assign_type")
	idx, err2 := os.ReadFile("/sys/class/net/" + name + "/ifindex")
	if err1 == nil && err2 == nil && strings.TrimSpace(string(idx)) == strconv.Itoa(br.Attrs().Index) &&
		strings.TrimSpace(string(typ)) == addrAssignSet {
		return nil
	}
	return PinMAC(h, br)
}

// addrAssignSet is NET_ADDR_SET: the MAC was set by user space.
const addrAssignSet = "3"
