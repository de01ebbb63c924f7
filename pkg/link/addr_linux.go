package link

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrAddressConflict is returned when an interface already has a different
// address in the way of the one to add.
var ErrAddressConflict = errors.New("interface already has a different address")

// EnsureAddrs puts every address of addrs on l, tolerating a concurrent
// adder (EEXIST). Addresses equal to one of addrs are kept. A conflicting
// one — any other IPv4 address, or an IPv6 address of an overlapping subnet —
// is replaced when force is set, else it is an error wrapping
// ErrAddressConflict. IPv6 link-local addresses never conflict. IPv6
// addresses are added without duplicate address detection. h must act in
// the calling thread's namespace (nil does): l's addresses are listed there
// with a dump the kernel filters by interface.
//
// Equivalent to: ip addr add $addr dev $l [after ip addr del $old dev $l]
func EnsureAddrs(h *netlink.Handle, l netlink.Link, addrs []*net.IPNet, force bool) error {
	name := l.Attrs().Name
	have, err := LinkAddrs(l.Attrs().Index, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("listing addresses of %q: %w", name, err)
	}
	for _, a := range have {
		if wanted(a.IPNet, addrs) {
			continue
		}
		for _, want := range addrs {
			if !conflicts(a.IPNet, want) {
				continue
			}
			if !force {
				return fmt.Errorf("%q already has an IP address different from %v (it has %v): %w",
					name, want, a.IPNet, ErrAddressConflict)
			}
			if err := h.AddrDel(l, &a); err != nil && !IsNotFound(err) {
				return fmt.Errorf("removing address %v from %q: %w", a.IPNet, name, err)
			}
			break
		}
	}
	for _, addr := range addrs {
		if err := addAddr(h, l, addr); err != nil {
			return err
		}
	}
	return nil
}

func addAddr(h *netlink.Handle, l netlink.Link, addr *net.IPNet) error {
	a := &netlink.Addr{IPNet: addr}
	if Family(addr.IP) == netlink.FAMILY_V6 {
		// No DAD: the address serves at once, and containers reach their
		// gateway as soon as ADD returns.
		a.Flags = unix.IFA_F_NODAD
	}
	if err := h.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding address %v to %q: %w", addr, l.Attrs().Name, err)
	}
	return nil
}

func wanted(a *net.IPNet, addrs []*net.IPNet) bool {
	for _, w := range addrs {
		if a.IP.Equal(w.IP) && maskEqual(a.Mask, w.Mask) {
			return true
		}
	}
	return false
}

func conflicts(have, want *net.IPNet) bool {
	if Family(have.IP) != Family(want.IP) {
		return false
	}
	if have.IP.To4() != nil {
		return true
	}
	if have.IP.IsLinkLocalUnicast() {
		return false
	}
	return have.Contains(want.IP) || want.Contains(have.IP)
}

func maskEqual(a, b net.IPMask) bool {
	oa, ba := a.Size()
	ob, bb := b.Size()
	return oa == ob && ba == bb
}

// Family returns the netlink address family of ip.
func Family(ip net.IP) int {
	if ip.To4() != nil {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}
