package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/backup"
)

// linkOps returns the link calls of the tuner: netlink in the calling
// thread's namespace unless a test gave a fake.
func (t *tuner) linkOps() linkops.Links {
	if t.links == nil {
		return linkops.Netlink{}
	}
	return t.links
}

// readLink returns the attributes of the interface called name; a missing
// one wraps linkops.ErrNotFound.
// Equivalent to: ip -d link show dev $name
func (t *tuner) readLink(name string) (linkops.Attrs, error) {
	l, err := t.linkOps().Get(name)
	if err != nil && !errors.Is(err, linkops.ErrNotFound) {
		return linkops.Attrs{}, types.Errorf(types.ErrIO, "%w", err)
	}
	return l, err
}

// ipv6MinMTU is the smallest MTU IPv6 works with (RFC 8200). Below it the
// kernel disables IPv6 on the interface and removes its addresses, and
// raising the MTU again brings none of them back.
const ipv6MinMTU = 1280

// checkMTUKeepsIPv6 refuses an MTU below ipv6MinMTU on an interface that
// holds IPv6 addresses other than link-local ones: DEL could restore the
// MTU but not the addresses. A link-local address comes back by itself.
// Equivalent to: ip -6 addr show dev $link scope global
func checkMTUKeepsIPv6(links linkops.Links, l linkops.Attrs, mtu int) error {
	if mtu == 0 || mtu >= ipv6MinMTU {
		return nil
	}
	addrs, err := links.Addrs(l, netlink.FAMILY_V6)
	if err != nil {
		return types.Errorf(types.ErrIO, "listing the IPv6 addresses of %q: %w", l.Name, err)
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			return types.Errorf(types.ErrInvalidConfig,
				"mtu %d: below %d, the smallest MTU of IPv6, and %q holds %s: the kernel would remove its IPv6 addresses for good",
				mtu, ipv6MinMTU, l.Name, a.IPNet)
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

// attrChange is one link attribute to set, with its inverse.
type attrChange struct {
	apply func(linkops.Links, linkops.Attrs) error
	undo  func(linkops.Links, linkops.Attrs) error
}

// attrChanges lists, in the order they apply (mac, promisc, mtu, allmulti,
// txQLen), the attribute changes c asks for, each with the inverse that
// restores before.
func attrChanges(c *Config, before linkops.Attrs) []attrChange {
	var out []attrChange
	if mac := c.HardwareAddr(); mac != nil {
		out = append(out, attrChange{
			func(o linkops.Links, l linkops.Attrs) error { return o.SetMAC(l, mac) },
			func(o linkops.Links, l linkops.Attrs) error { return o.SetMAC(l, before.MAC) }})
	}
	if c.Promisc != nil {
		on := *c.Promisc
		out = append(out, attrChange{
			func(o linkops.Links, l linkops.Attrs) error { return o.SetPromisc(l, on) },
			func(o linkops.Links, l linkops.Attrs) error { return o.SetPromisc(l, before.Promisc) }})
	}
	if c.MTU != 0 {
		out = append(out, attrChange{
			func(o linkops.Links, l linkops.Attrs) error { return o.SetMTU(l, c.MTU) },
			func(o linkops.Links, l linkops.Attrs) error { return o.SetMTU(l, before.MTU) }})
	}
	if c.Allmulti != nil {
		on := *c.Allmulti
		out = append(out, attrChange{
			func(o linkops.Links, l linkops.Attrs) error { return o.SetAllmulti(l, on) },
			func(o linkops.Links, l linkops.Attrs) error { return o.SetAllmulti(l, before.Allmulti) }})
	}
	if c.TxQLen != nil {
		q := *c.TxQLen
		out = append(out, attrChange{
			func(o linkops.Links, l linkops.Attrs) error { return o.SetTxQLen(l, q) },
			func(o linkops.Links, l linkops.Attrs) error { return o.SetTxQLen(l, before.TxQLen) }})
	}
	return out
}

// snapshotAttrs records in st the current value of every attribute c
// changes.
func snapshotAttrs(st *backup.State, c *Config, before linkops.Attrs) {
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
func restoreAttrs(links linkops.Links, l linkops.Attrs, st *backup.State) error {
	var errs []error
	if st.MTU != 0 {
		errs = append(errs, links.SetMTU(l, st.MTU))
	}
	if st.MAC != "" {
		mac, err := net.ParseMAC(st.MAC)
		if err != nil {
			errs = append(errs, fmt.Errorf("state mac %q: %w", st.MAC, err))
		} else {
			errs = append(errs, links.SetMAC(l, mac))
		}
	}
	if st.Promisc != nil {
		errs = append(errs, links.SetPromisc(l, *st.Promisc))
	}
	if st.Allmulti != nil {
		errs = append(errs, links.SetAllmulti(l, *st.Allmulti))
	}
	if st.TxQLen != nil {
		errs = append(errs, links.SetTxQLen(l, *st.TxQLen))
	}
	return errors.Join(errs...)
}
