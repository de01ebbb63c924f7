package link

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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

// LinkAddrs lists the addresses of the link with index of the family, in
// the calling thread's namespace, retrying interrupted dumps. The kernel
// filters by interface (a strict-checking socket with the index in the
// request), so the cost does not grow with the other links of the
// namespace (every veth has an IPv6 link-local address); a kernel that
// refuses the filter gets the full dump, filtered here.
//
// Equivalent to: ip addr show dev $l
func LinkAddrs(index, family int) ([]netlink.Addr, error) {
	return RetryDump(func() ([]netlink.Addr, error) { return linkAddrs(index, family) })
}

func linkAddrs(index, family int) ([]netlink.Addr, error) {
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	defer s.Close()
	strict := unix.SetsockoptInt(int(s.GetFd()), unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1) == nil
	req := nl.NewNetlinkRequest(unix.RTM_GETADDR, unix.NLM_F_DUMP)
	msg := nl.NewIfAddrmsg(family)
	if strict {
		msg.Index = uint32(index)
	}
	req.AddData(msg)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWADDR)
	if err != nil {
		return nil, err
	}
	var out []netlink.Addr
	for _, m := range msgs {
		a, fam, err := parseAddr(m)
		if err != nil {
			return nil, fmt.Errorf("parsing address of link %d: %w", index, err)
		}
		if a.LinkIndex != index || (family != netlink.FAMILY_ALL && fam != family) {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// parseAddr reads the fields of an RTM_NEWADDR message that address
// comparison and deletion use: the local address with its prefix, the
// interface, the scope and the flags.
func parseAddr(m []byte) (netlink.Addr, int, error) {
	msg := nl.DeserializeIfAddrmsg(m)
	attrs, err := nl.ParseRouteAttr(m[msg.Len():])
	if err != nil {
		return netlink.Addr{}, 0, err
	}
	bits := 32
	if msg.Family == unix.AF_INET6 {
		bits = 128
	}
	var local, address net.IP
	a := netlink.Addr{LinkIndex: int(msg.Index), Scope: int(msg.Scope), Flags: int(msg.Flags)}
	for _, at := range attrs {
		switch at.Attr.Type {
		case unix.IFA_LOCAL:
			local = net.IP(at.Value)
		case unix.IFA_ADDRESS:
			address = net.IP(at.Value)
		case unix.IFA_LABEL:
			a.Label = string(bytes.TrimRight(at.Value, "\x00"))
		case unix.IFA_FLAGS:
			if len(at.Value) >= 4 {
				a.Flags = int(binary.NativeEndian.Uint32(at.Value))
			}
		}
	}
	ip := local
	if ip == nil {
		ip = address
	}
	if ip == nil {
		return netlink.Addr{}, 0, fmt.Errorf("address message without an address")
	}
	a.IPNet = &net.IPNet{IP: ip, Mask: net.CIDRMask(int(msg.Prefixlen), bits)}
	if local != nil && address != nil && !local.Equal(address) {
		a.Peer = &net.IPNet{IP: address, Mask: net.CIDRMask(int(msg.Prefixlen), bits)}
	}
	return a, int(msg.Family), nil
}
