package link

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// maxDumpTries bounds how often a dump interrupted by a concurrent change is
// run again.
const maxDumpTries = 5

// RetryDump runs dump until it completes without netlink.ErrDumpInterrupted
// (the kernel's NLM_F_DUMP_INTR: a link, address or route changed while the
// dump ran, so the partial result may miss or repeat entries), at most
// maxDumpTries times. When every try was interrupted, the error wraps
// netlink.ErrDumpInterrupted and no result is returned; any other error is
// returned at once.
func RetryDump[T any](dump func() (T, error)) (T, error) {
	var zero T
	for try := 1; ; try++ {
		out, err := dump()
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return zero, err
		}
		if try == maxDumpTries {
			return zero, fmt.Errorf("%d dumps in a row interrupted by concurrent changes: %w", try, err)
		}
	}
}

// AddrList lists the addresses of l (all links when nil) of the family,
// retrying interrupted dumps. A nil h acts in the calling thread's namespace.
//
// Equivalent to: ip addr show [dev $l]
func AddrList(h *netlink.Handle, l netlink.Link, family int) ([]netlink.Addr, error) {
	h = orDefault(h)
	return RetryDump(func() ([]netlink.Addr, error) { return h.AddrList(l, family) })
}

// RouteListFiltered lists the routes of the family that match filter on the
// fields of mask (netlink.RT_FILTER_*), retrying interrupted dumps. A nil h
// acts in the calling thread's namespace.
//
// Equivalent to: ip route show [table $t] [to $dst] [via $gw] [dev $l]
func RouteListFiltered(h *netlink.Handle, family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	h = orDefault(h)
	return RetryDump(func() ([]netlink.Route, error) { return h.RouteListFiltered(family, filter, mask) })
}

// LinkList lists every link, retrying interrupted dumps. A nil h acts in
// the calling thread's namespace.
//
// Equivalent to: ip link show
func LinkList(h *netlink.Handle) ([]netlink.Link, error) {
	h = orDefault(h)
	return RetryDump(h.LinkList)
}

// BridgeVlanList lists the VLANs of every bridge port, by interface index,
// retrying interrupted dumps. A nil h acts in the calling thread's namespace.
//
// Equivalent to: bridge vlan show
func BridgeVlanList(h *netlink.Handle) (map[int32][]*nl.BridgeVlanInfo, error) {
	h = orDefault(h)
	return RetryDump(h.BridgeVlanList)
}
