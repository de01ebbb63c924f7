package ifconf

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Per-interface settings are read over netlink (the kernel reports them
// with every link) rather than under /proc/sys/net: each path lookup there
// compares against the entries of every network namespace on the machine
// that looked the same name up (all of them share names such as net, conf
// and eth0), so with a thousand containers one sysctl read costs a few
// hundred microseconds, and a netlink request stays constant.

// IPv4 per-interface settings, as the kernel numbers them (IPV4_DEVCONF_*,
// linux/ip.h); the names are those under /proc/sys/net/ipv4/conf/$if.
var ipv4Conf = map[string]int{
	"forwarding": 1, "mc_forwarding": 2, "proxy_arp": 3, "accept_redirects": 4,
	"secure_redirects": 5, "send_redirects": 6, "shared_media": 7, "rp_filter": 8,
	"accept_source_route": 9, "bootp_relay": 10, "log_martians": 11, "tag": 12,
	"arp_filter": 13, "medium_id": 14, "disable_xfrm": 15, "disable_policy": 16,
	"force_igmp_version": 17, "arp_announce": 18, "arp_ignore": 19,
	"promote_secondaries": 20, "arp_accept": 21, "arp_notify": 22, "accept_local": 23,
	"src_valid_mark": 24, "proxy_arp_pvlan": 25, "route_localnet": 26,
}

// ipv4Plain are the IPv4 per-interface settings whose /proc/sys handler
// only stores the value and marks it set, as a netlink write does: the
// others also flush the routing cache (accept_local, route_localnet,
// disable_xfrm, disable_policy, promote_secondaries), announce the change
// (rp_filter, proxy_arp) or reconfigure the device (forwarding), which a
// netlink write skips.
var ipv4Plain = map[string]bool{
	"accept_redirects": true, "secure_redirects": true, "send_redirects": true, "shared_media": true,
	"accept_source_route": true, "bootp_relay": true, "log_martians": true, "tag": true,
	"arp_filter": true, "medium_id": true, "force_igmp_version": true, "arp_announce": true,
	"arp_ignore": true, "arp_accept": true, "arp_notify": true, "src_valid_mark": true,
	"proxy_arp_pvlan": true,
}

// IPv4Plain reports whether writing the IPv4 per-interface setting key
// over netlink (SetIPv4Conf) has exactly the effect of writing it under
// /proc/sys/net/ipv4/conf/$if.
func IPv4Plain(key string) bool { return ipv4Plain[key] }

// IPv6 per-interface settings (DEVCONF_*, linux/ipv6.h), by /proc name.
var ipv6Conf = map[string]int{
	"forwarding": 0, "accept_ra": 3, "autoconf": 5, "disable_ipv6": 26, "accept_dad": 27,
	"keep_addr_on_down": 33, "enhanced_dad": 42,
}

// DevConf holds the per-interface IPv4 and IPv6 settings of one link, as
// read over netlink.
type DevConf struct {
	Index int    // interface index
	Name  string // interface name
	v4    []byte // IFLA_INET_CONF: u32 per IPV4_DEVCONF_* - 1
	v6    []byte // IFLA_INET6_CONF: s32 per DEVCONF_*
	raw   []byte // the RTM_NEWLINK answer
}

// ReadDevConf reads the link called name (or, when name is empty, with
// index) in the calling thread's namespace with one request.
//
// Equivalent to: ip -d link show dev $name, and the values under
// /proc/sys/net/ipv{4,6}/conf/$name
func ReadDevConf(name string, index int) (*DevConf, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	what := name
	if name == "" {
		msg.Index = int32(index)
		what = fmt.Sprintf("index %d", index)
	}
	req.AddData(msg)
	if name != "" {
		req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	}
	msgs, err := req.Execute(unix.NETLINK_ROUTE, 0)
	if err != nil {
		return nil, fmt.Errorf("reading link %s: %w", what, err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("reading link %s: %d answers", what, len(msgs))
	}
	d, err := parseDevConf(msgs[0])
	if err != nil {
		return nil, err
	}
	d.raw = msgs[0]
	return d, nil
}

// Link returns the link as the request read it.
func (d *DevConf) Link() (netlink.Link, error) {
	l, err := netlink.LinkDeserialize(nil, d.raw)
	if err != nil {
		return nil, fmt.Errorf("parsing link %q: %w", d.Name, err)
	}
	return l, nil
}

func parseDevConf(m []byte) (*DevConf, error) {
	info := nl.DeserializeIfInfomsg(m)
	attrs, err := nl.ParseRouteAttr(m[info.Len():])
	if err != nil {
		return nil, fmt.Errorf("parsing link %d: %w", info.Index, err)
	}
	d := &DevConf{Index: int(info.Index)}
	for _, a := range attrs {
		switch a.Attr.Type &^ unix.NLA_F_NESTED {
		case unix.IFLA_IFNAME:
			d.Name = string(bytes.TrimRight(a.Value, "\x00"))
		case unix.IFLA_AF_SPEC:
			d.parseAFSpec(a.Value)
		}
	}
	return d, nil
}

func (d *DevConf) parseAFSpec(b []byte) {
	fams, err := nl.ParseRouteAttr(b)
	if err != nil {
		return
	}
	for _, f := range fams {
		inner, err := nl.ParseRouteAttr(f.Value)
		if err != nil {
			continue
		}
		for _, a := range inner {
			switch {
			case f.Attr.Type&^unix.NLA_F_NESTED == unix.AF_INET && a.Attr.Type == unix.IFLA_INET_CONF:
				d.v4 = a.Value
			case f.Attr.Type&^unix.NLA_F_NESTED == unix.AF_INET6 && a.Attr.Type == unix.IFLA_INET6_CONF:
				d.v6 = a.Value
			}
		}
	}
}

// IPv4 returns the IPv4 setting called key (arp_notify, route_localnet, …)
// and whether the link reports it.
func (d *DevConf) IPv4(key string) (int, bool) {
	id, ok := ipv4Conf[key]
	if !ok {
		return 0, false
	}
	return word(d.v4, id-1)
}

// IPv6 returns the IPv6 setting called key (accept_ra, accept_dad, …) and
// whether the link reports it (not without IPv6).
func (d *DevConf) IPv6(key string) (int, bool) {
	id, ok := ipv6Conf[key]
	if !ok {
		return 0, false
	}
	return word(d.v6, id)
}

func word(b []byte, i int) (int, bool) {
	if i < 0 || len(b) < 4*(i+1) {
		return 0, false
	}
	return int(int32(binary.NativeEndian.Uint32(b[4*i:]))), true
}

// HasIPv4Conf reports whether key is an IPv4 per-interface setting that
// SetIPv4Conf can write.
func HasIPv4Conf(key string) bool {
	_, ok := ipv4Conf[key]
	return ok
}

// SetIPv4Conf writes IPv4 per-interface settings of the link with index in
// the calling thread's namespace, in one request. It has the effect of
// writing /proc/sys/net/ipv4/conf/$if/$key (the setting no longer follows
// the namespace's default), without the cost of the path lookup.
//
// Equivalent to: sysctl -w net.ipv4.conf.$if.$key=$value ...
func SetIPv4Conf(index int, values map[string]int) error {
	conf := nl.NewRtAttr(unix.IFLA_INET_CONF|unix.NLA_F_NESTED, nil)
	for key, v := range values {
		id, ok := ipv4Conf[key]
		if !ok {
			return fmt.Errorf("net.ipv4.conf.*.%s: not a per-interface setting", key)
		}
		b := make([]byte, 4)
		binary.NativeEndian.PutUint32(b, uint32(int32(v)))
		conf.AddRtAttr(id, b)
	}
	spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	spec.AddChild(nl.NewRtAttr(unix.AF_INET, conf.Serialize()))
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	req.AddData(spec)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("setting %v on link %d: %w", values, index, err)
	}
	return nil
}

// netconfForwarding reads the "all" forwarding setting of the family
// (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding) in the calling
// thread's namespace over netlink.
//
// Equivalent to: sysctl net.ipv4.ip_forward
func netconfForwarding(family int) (int, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETNETCONF, unix.NLM_F_ACK)
	req.AddData(&netconfMsg{family: uint8(family)})
	idx := make([]byte, 4)
	all := int32(netconfIfindexAll)
	binary.NativeEndian.PutUint32(idx, uint32(all))
	req.AddData(nl.NewRtAttr(netconfaIfindex, idx))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWNETCONF)
	if err != nil {
		return 0, fmt.Errorf("reading forwarding of family %d: %w", family, err)
	}
	for _, m := range msgs {
		if len(m) < 4 {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:])
		if err != nil {
			return 0, fmt.Errorf("parsing forwarding of family %d: %w", family, err)
		}
		for _, a := range attrs {
			if a.Attr.Type == netconfaForwarding && len(a.Value) >= 4 {
				return int(int32(binary.NativeEndian.Uint32(a.Value))), nil
			}
		}
	}
	return 0, fmt.Errorf("reading forwarding of family %d: not in the answer", family)
}

// NETCONFA_* (linux/netconf.h).
const (
	netconfaIfindex    = 1
	netconfaForwarding = 2
	netconfIfindexAll  = -1
)

// netconfMsg is struct netconfmsg padded to the netlink alignment.
type netconfMsg struct{ family uint8 }

func (m *netconfMsg) Len() int { return 4 }

func (m *netconfMsg) Serialize() []byte { return []byte{m.family, 0, 0, 0} }
