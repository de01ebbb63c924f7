package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

// linkAttrs are the attributes of the container interface that tuning sets.
type linkAttrs struct {
	MAC      net.HardwareAddr
	MTU      int
	Promisc  bool
	Allmulti bool
	TxQLen   int
}

// errLinkNotFound marks a container interface that does not exist.
var errLinkNotFound = errors.New("link not found")

// readLink returns the interface called name and its attributes.
// Equivalent to: ip -d link show dev $name
func readLink(name string) (netlink.Link, linkAttrs, error) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, linkAttrs{}, fmt.Errorf("interface %q: %w", name, errLinkNotFound)
		}
		return nil, linkAttrs{}, types.Errorf(types.ErrIO, "interface %q: %w", name, err)
	}
	attrs := link.Attrs()
	return link, linkAttrs{
		MAC:      attrs.HardwareAddr,
		MTU:      attrs.MTU,
		Promisc:  attrs.RawFlags&unix.IFF_PROMISC != 0,
		Allmulti: attrs.RawFlags&unix.IFF_ALLMULTI != 0,
		TxQLen:   attrs.TxQLen,
	}, nil
}

// setMAC equivalent to: ip link set dev $link address $mac
func setMAC(link netlink.Link, mac net.HardwareAddr) error {
	if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
		return fmt.Errorf("setting mac %s on %q: %w", mac, link.Attrs().Name, err)
	}
	return nil
}

// ipv6MinMTU is the smallest MTU IPv6 works with (RFC 8200). Below it the
// kernel disables IPv6 on the interface and removes its addresses, and
// raising the MTU again brings none of them back.
const ipv6MinMTU = 1280

// checkMTUKeepsIPv6 refuses an MTU below ipv6MinMTU on an interface that
// holds IPv6 addresses other than link-local ones: DEL could restore the
// MTU but not the addresses. A link-local address comes back by itself.
// Equivalent to: ip -6 addr show dev $link scope global
func checkMTUKeepsIPv6(link netlink.Link, mtu int) error {
	if mtu == 0 || mtu >= ipv6MinMTU {
		return nil
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		return types.Errorf(types.ErrIO, "listing the IPv6 addresses of %q: %w", link.Attrs().Name, err)
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			return types.Errorf(types.ErrInvalidConfig,
				"mtu %d: below %d, the smallest MTU of IPv6, and %q holds %s: the kernel would remove its IPv6 addresses for good",
				mtu, ipv6MinMTU, link.Attrs().Name, a.IPNet)
		}
	}
	return nil
}

// checkMACRestorable refuses a MAC change that DEL could not undo: the
// kernel takes no all-zero address back, and an interface without a MAC of
// its own (a loopback, a tun device) has none to restore.
func checkMACRestorable(name string, before net.HardwareAddr, wanted net.HardwareAddr) error {
	if wanted == nil {
		return nil
	}
	for _, b := range before {
		if b != 0 {
			return nil
		}
	}
	return types.Errorf(types.ErrInvalidConfig,
		"mac %s: %q has no MAC address of its own (%q), so DEL could not put the old one back", wanted, name, before.String())
}

// setMTU equivalent to: ip link set dev $link mtu $mtu
func setMTU(link netlink.Link, mtu int) error {
	if err := netlink.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("setting mtu %d on %q: %w", mtu, link.Attrs().Name, err)
	}
	return nil
}

// setPromisc equivalent to: ip link set dev $link promisc on|off
func setPromisc(link netlink.Link, on bool) error {
	set := netlink.SetPromiscOff
	if on {
		set = netlink.SetPromiscOn
	}
	if err := set(link); err != nil {
		return fmt.Errorf("setting promisc %t on %q: %w", on, link.Attrs().Name, err)
	}
	return nil
}

// setAllmulti equivalent to: ip link set dev $link allmulticast on|off
func setAllmulti(link netlink.Link, on bool) error {
	set := netlink.LinkSetAllmulticastOff
	if on {
		set = netlink.LinkSetAllmulticastOn
	}
	if err := set(link); err != nil {
		return fmt.Errorf("setting allmulti %t on %q: %w", on, link.Attrs().Name, err)
	}
	return nil
}

// setTxQLen equivalent to: ip link set dev $link txqueuelen $qlen
func setTxQLen(link netlink.Link, qlen int) error {
	if err := netlink.LinkSetTxQLen(link, qlen); err != nil {
		return fmt.Errorf("setting txQLen %d on %q: %w", qlen, link.Attrs().Name, err)
	}
	return nil
}

// attrChange is one link attribute to set, with its inverse.
type attrChange struct {
	apply func(netlink.Link) error
	undo  func(netlink.Link) error
}

// attrChanges lists, in the order they apply (mac, promisc, mtu, allmulti,
// txQLen), the attribute changes c asks for, each with the inverse that
// restores before.
func attrChanges(c *Config, before linkAttrs) []attrChange {
	var out []attrChange
	if mac := c.HardwareAddr(); mac != nil {
		out = append(out, attrChange{
			func(l netlink.Link) error { return setMAC(l, mac) },
			func(l netlink.Link) error { return setMAC(l, before.MAC) }})
	}
	if c.Promisc != nil {
		on := *c.Promisc
		out = append(out, attrChange{
			func(l netlink.Link) error { return setPromisc(l, on) },
			func(l netlink.Link) error { return setPromisc(l, before.Promisc) }})
	}
	if c.MTU != 0 {
		out = append(out, attrChange{
			func(l netlink.Link) error { return setMTU(l, c.MTU) },
			func(l netlink.Link) error { return setMTU(l, before.MTU) }})
	}
	if c.Allmulti != nil {
		on := *c.Allmulti
		out = append(out, attrChange{
			func(l netlink.Link) error { return setAllmulti(l, on) },
			func(l netlink.Link) error { return setAllmulti(l, before.Allmulti) }})
	}
	if c.TxQLen != nil {
		q := *c.TxQLen
		out = append(out, attrChange{
			func(l netlink.Link) error { return setTxQLen(l, q) },
			func(l netlink.Link) error { return setTxQLen(l, before.TxQLen) }})
	}
	return out
}

// snapshotAttrs records in st the current value of every attribute c
// changes.
func snapshotAttrs(st *State, c *Config, before linkAttrs) {
	if c.HardwareAddr() != nil {
		st.MAC = before.MAC.String()
	}
	if c.Promisc != nil {
		st.Promisc = &before.Promisc
	}
	if c.MTU != 0 {
		st.MTU = before.MTU
	}
	if c.Allmulti != nil {
		st.Allmulti = &before.Allmulti
	}
	if c.TxQLen != nil {
		st.TxQLen = &before.TxQLen
	}
}

// restoreAttrs puts back the attributes recorded in st, in the order mtu,
// mac, promisc, allmulti, txQLen, and returns every failure.
func restoreAttrs(link netlink.Link, st *State) error {
	var errs []error
	if st.MTU != 0 {
		errs = append(errs, setMTU(link, st.MTU))
	}
	if st.MAC != "" {
		mac, err := net.ParseMAC(st.MAC)
		if err != nil {
			errs = append(errs, fmt.Errorf("state mac %q: %w", st.MAC, err))
		} else {
			errs = append(errs, setMAC(link, mac))
		}
	}
	if st.Promisc != nil {
		errs = append(errs, setPromisc(link, *st.Promisc))
	}
	if st.Allmulti != nil {
		errs = append(errs, setAllmulti(link, *st.Allmulti))
	}
	if st.TxQLen != nil {
		errs = append(errs, setTxQLen(link, *st.TxQLen))
	}
	return errors.Join(errs...)
}
