package link

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/macaddr"
	"cnisuite/pkg/types"
)

// ErrMissing is wrapped by verification errors: something a result lists is
// not on the system.
var ErrMissing = errors.New("missing")

// VerifyIface checks, inside the interface's namespace, that ifname has every
// address res assigns to it, with a route to its subnet, and that every route
// of res exists.
//
// Equivalent to: ip addr show dev $ifname; ip route show
func VerifyIface(ifname string, res *types.Result) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("interface %q: %w", ifname, joinMissing(err))
	}
	ips, err := ipsOf(ifname, res)
	if err != nil {
		return err
	}
	gws := map[int]net.IP{}
	for _, ip := range ips {
		if err := verifyAddr(l, ip); err != nil {
			return err
		}
		if fam := Family(ip.Address.IP); ip.Gateway != nil && gws[fam] == nil {
			gws[fam] = ip.Gateway
		}
	}
	for _, r := range res.Routes {
		if err := verifyRoute(l, RouteFor(l.Attrs().Index, r, gws)); err != nil {
			return err
		}
	}
	return nil
}

func joinMissing(err error) error {
	if IsNotFound(err) {
		return fmt.Errorf("%w: %w", ErrMissing, err)
	}
	return err
}

func verifyAddr(l netlink.Link, ip *types.IPConfig) error {
	name := l.Attrs().Name
	addrs, err := AddrList(nil, l, Family(ip.Address.IP))
	if err != nil {
		return fmt.Errorf("listing addresses of %q: %w", name, err)
	}
	found := false
	for _, a := range addrs {
		found = found || (a.IP.Equal(ip.Address.IP) && maskEqual(a.Mask, ip.Address.Mask))
	}
	if !found {
		return fmt.Errorf("address %v on %q: %w", &ip.Address, name, ErrMissing)
	}
	subnet := &net.IPNet{IP: ip.Address.IP.Mask(ip.Address.Mask), Mask: ip.Address.Mask}
	// In any table: a plugin chained after ours (sbr) may have moved it.
	routes, err := RouteListFiltered(nil, Family(ip.Address.IP),
		&netlink.Route{LinkIndex: l.Attrs().Index, Dst: subnet, Table: unix.RT_TABLE_UNSPEC},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("listing routes of %q: %w", name, err)
	}
	if len(routes) == 0 {
		return fmt.Errorf("route to %v on %q: %w", subnet, name, ErrMissing)
	}
	return nil
}

func verifyRoute(l netlink.Link, want *netlink.Route) error {
	// A route of no given table is looked for in every table: a plugin
	// chained after ours (sbr) may have moved it out of main.
	filter := &netlink.Route{Dst: want.Dst, Gw: want.Gw, Table: want.Table}
	mask := netlink.RT_FILTER_DST | netlink.RT_FILTER_TABLE
	if want.Gw != nil {
		mask |= netlink.RT_FILTER_GW
	}
	if ones, _ := want.Dst.Mask.Size(); ones == 0 {
		filter.Dst = nil // the kernel reports default routes without a destination
	}
	routes, err := RouteListFiltered(nil, Family(want.Dst.IP), filter, mask)
	if err != nil {
		return fmt.Errorf("listing routes of %q: %w", l.Attrs().Name, err)
	}
	if len(routes) == 0 {
		return fmt.Errorf("route to %v via %v: %w", want.Dst, want.Gw, ErrMissing)
	}
	return nil
}

// CheckAttrs compares a link's MAC and MTU with those its result
// interface lists (what want leaves out is not compared).
func CheckAttrs(l *netlink.LinkAttrs, want *types.Interface) error {
	if want.Mac != "" && !macaddr.Same(want.Mac, l.HardwareAddr) {
		return fmt.Errorf("MAC %s, prevResult says %s", l.HardwareAddr, want.Mac)
	}
	if want.Mtu != 0 && l.MTU != want.Mtu {
		return fmt.Errorf("MTU %d, prevResult says %d", l.MTU, want.Mtu)
	}
	return nil
}
