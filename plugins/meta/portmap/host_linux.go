package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/sysctl"
	"cnisuite/pkg/sysctlkeep"
)

// linuxHost is hostOps on the running kernel.
type linuxHost struct{}

// EnableLocalnet sets route_localnet=1 on the interface routing to ip, so
// that 127.0.0.1:hostPort DNATed to the container can leave through it.
// Equivalent to: sysctl -w net.ipv4.conf.$(ip route get $ip | dev).route_localnet=1
func (linuxHost) EnableLocalnet(ip net.IP, holder string) error {
	routes, err := netlink.RouteGet(ip)
	if errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH) {
		return fmt.Errorf("%w (route to %s: %w)", errNoRoute, ip, err)
	}
	if err != nil {
		return fmt.Errorf("route to %s: %w", ip, err)
	}
	if len(routes) == 0 || routes[0].LinkIndex == 0 {
		return fmt.Errorf("%w (%s)", errNoRoute, ip)
	}
	// Read and, when needed, written over netlink: a lookup under
	// /proc/sys/net grows with the number of namespaces on the machine.
	// The one read brings the link's name too.
	d, err := ifconf.ReadDevConf("", routes[0].LinkIndex)
	if err != nil {
		return fmt.Errorf("the link routing to %s: %w", ip, err)
	}
	if err := d.EnsureIPv4("route_localnet", 1); err != nil {
		return fmt.Errorf("route_localnet of the link routing to %s: %w", ip, err)
	}
	key := "net/ipv4/conf/" + d.Name + "/route_localnet"
	return sysctlkeep.Keeper{}.Hold(key, "1", holder)
}

// ReleaseLocalnet lets go of the route_localnet EnableLocalnet kept for
// holder (the value stays: other attachments of the link may need it).
func (linuxHost) ReleaseLocalnet(holder string) error {
	return sysctlkeep.Keeper{}.Release(holder)
}

// LocalnetOn reports whether route_localnet is on for the interface
// routing to ip; without such a route there is nothing to put back.
// Equivalent to: sysctl net.ipv4.conf.$(ip route get $ip | dev).route_localnet
func (linuxHost) LocalnetOn(ip net.IP) bool {
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 || routes[0].LinkIndex == 0 {
		return true
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return true
	}
	v, err := sysctl.Get("net/ipv4/conf/" + l.Attrs().Name + "/route_localnet")
	return err == nil && v == "1"
}

// FlushUDP deletes the UDP conntrack entries of flows the mappings catch:
// original destination port in a span, original destination the span's
// host address or, for a span without one, an address of the node (the
// DNAT rules match only traffic to the node itself). The node's own flows
// to other machines keep their entries, whatever their ports. Over
// netlink: one dump of the table, each entry matched against every span.
// Equivalent to: conntrack -D -p udp -d $addr --orig-port-dst $port, per
// port of each span and address of the node
func (linuxHost) FlushUDP(v4 bool, spans []portSpan) error {
	family := netlink.InetFamily(unix.AF_INET6)
	if v4 {
		family = unix.AF_INET
	}
	addrs, err := netlink.AddrList(nil, int(family))
	if err != nil {
		return fmt.Errorf("addresses of the node: %w", err)
	}
	f := udpDstFilter{spans: spans}
	for _, a := range addrs {
		f.local = append(f.local, a.IP)
	}
	_, err = netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, f)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// udpDstFilter matches UDP flows to a span's port on its host address or,
// without one, on an address of the node (netlink.ConntrackFilter takes
// one port, so a range of thousands would be thousands of filters, each
// tried on every entry).
type udpDstFilter struct {
	spans []portSpan
	local []net.IP // the node's addresses of the family
}

// MatchConntrackFlow reports whether the filter matches the flow.
func (f udpDstFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	p, dst := int(flow.Forward.DstPort), flow.Forward.DstIP
	for _, s := range f.spans {
		if s.First <= p && p <= s.Last && f.catches(s, dst) {
			return true
		}
	}
	return false
}

// catches reports whether a span's mapping catches traffic to dst.
func (f udpDstFilter) catches(s portSpan, dst net.IP) bool {
	if s.Host != nil && !s.Host.IsUnspecified() {
		return s.Host.Equal(dst)
	}
	for _, a := range f.local {
		if a.Equal(dst) {
			return true
		}
	}
	return false
}
