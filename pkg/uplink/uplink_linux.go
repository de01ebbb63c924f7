// Package uplink finds the node's uplinks: the interfaces its default
// routes leave through, their names and their lowest MTU, and the routing
// table of a link's VRF.
package uplink

import (
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
)

// MTU returns the MTU of the node's uplink: the interface of the
// default route of each family in routing table table (0: the main
// table), the lowest of them when they differ, every next hop of a
// multipath route counting. It returns 0 when no family has a default
// route through an interface.
//
// Equivalent to: ip -4 route show default table $table; ip -6 route show
// default table $table; ip link show $dev (mtu).
func MTU(h *netlink.Handle, table int) (int, error) {
	h = orDefault(h)
	if table == 0 {
		table = unix.RT_TABLE_MAIN
	}
	low := 0
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteListFiltered(family, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return 0, fmt.Errorf("listing routes of table %d: %w", table, err)
		}
		for _, r := range routes {
			if !isDefault(r) {
				continue
			}
			for _, index := range routeLinks(r) {
				l, err := h.LinkByIndex(index)
				if err != nil {
					continue // gone since the dump
				}
				if mtu := l.Attrs().MTU; mtu > 0 && (low == 0 || mtu < low) {
					low = mtu
				}
			}
		}
	}
	return low, nil
}

func isDefault(r netlink.Route) bool {
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}

// routeLinks lists the interfaces a route leaves through.
func routeLinks(r netlink.Route) []int {
	if len(r.MultiPath) == 0 {
		if r.LinkIndex > 0 {
			return []int{r.LinkIndex}
		}
		return nil
	}
	var out []int
	for _, nh := range r.MultiPath {
		if nh.LinkIndex > 0 {
			out = append(out, nh.LinkIndex)
		}
	}
	return out
}

// VRFTable returns the routing table of the VRF the link name is enslaved
// to, or 0 when it is in none (or does not exist).
func VRFTable(h *netlink.Handle, name string) int {
	h = orDefault(h)
	l, err := h.LinkByName(name)
	if err != nil || l.Attrs().MasterIndex == 0 {
		return 0
	}
	m, err := h.LinkByIndex(l.Attrs().MasterIndex)
	if err != nil {
		return 0
	}
	if vrf, ok := m.(*netlink.Vrf); ok {
		return int(vrf.Table)
	}
	return 0
}

// DefaultRouteLinkNames returns the names of the interfaces the node's
// default routes leave through, both families, in the main table, every
// next hop of a multipath route counting, sorted and without duplicates.
//
// Equivalent to: ip route show default; ip -6 route show default
func DefaultRouteLinkNames(h *netlink.Handle) ([]string, error) {
	h = orDefault(h)
	seen := map[int]bool{}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := link.RouteListFiltered(h, family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range routes {
			if !isDefault(r) {
				continue
			}
			for _, index := range routeLinks(r) {
				seen[index] = true
			}
		}
	}
	var out []string
	for index := range seen {
		l, err := h.LinkByIndex(index)
		if err != nil {
			return nil, fmt.Errorf("reading uplink %d: %w", index, err)
		}
		out = append(out, l.Attrs().Name)
	}
	sort.Strings(out)
	return out, nil
}

// orDefault is h, or the package's handle in the calling thread's
// namespace when nil.
func orDefault(h *netlink.Handle) *netlink.Handle {
	if h == nil {
		return &netlink.Handle{}
	}
	return h
}
