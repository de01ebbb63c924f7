package link

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/types"
)

// ErrDADFailed is returned when IPv6 duplicate address detection fails.
var ErrDADFailed = errors.New("IPv6 duplicate address detection failed")

// ConfigureOptions tune ConfigureIface.
type ConfigureOptions struct {
	// DAD keeps IPv6 duplicate address detection (enhanced DAD) on, waits for
	// it and fails when it fails. Off, addresses are usable at once.
	DAD bool
	// DADTimeout bounds the wait for DAD; 0 means 5 s.
	DADTimeout time.Duration
	// ArpNotify announces the interface's addresses with gratuitous ARP when
	// it comes up (arp_notify=1).
	ArpNotify bool
}

// ConfigureIface gives the interface ifname the addresses and routes of res
// that belong to it, and sets it up. It must run inside the interface's
// namespace, on a locked thread (see pkg/ns). Every address must name
// ifname through its interface index.
//
// An interface given IPv4 addresses and no IPv6 one has IPv6 turned off
// (disable_ipv6=1) before it comes up, as Docker does for networks without
// IPv6 (CVE-2024-32473): nothing on it the user did not ask for — no
// link-local address, no address a router advertisement on the bridge
// configures — and none of the multicast a fresh IPv6 interface sends
// (MLD reports, router solicitations), which a bridge without a multicast
// querier floods to every other port, so that each pod's start costs all
// the pods already there. A chained tuning with
// net.ipv6.conf.IFNAME.disable_ipv6=0 turns it back on.
//
// Equivalent to: sysctl ...; ip addr add $ip dev $ifname [nodad]; ip link set
// $ifname up; ip route append $dst [via $gw] dev $ifname [metric] [table] [mtu] [advmss]
func ConfigureIface(ctx context.Context, ifname string, res *types.Result, o ConfigureOptions) error {
	d, err := ifconf.ReadDevConf(ifname, 0)
	if err != nil {
		return fmt.Errorf("looking up %q: %w", ifname, err)
	}
	l, err := d.Link()
	if err != nil {
		return err
	}
	ips, err := ipsOf(ifname, res)
	if err != nil {
		return err
	}
	hasV4, hasV6 := AddrFamilies(ips)
	if err := prepareSysctls(d, hasV4, hasV6, o); err != nil {
		return err
	}
	gws, err := addAddrs(l, ips, o.DAD)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("setting %q up: %w", ifname, err)
	}
	if hasV6 && o.DAD {
		if err := waitDAD(ctx, l, o.DADTimeout); err != nil {
			return err
		}
	}
	return addRoutes(l, res.Routes, gws)
}

// AddrFamilies reports which families the addresses of ips are of.
func AddrFamilies(ips []*types.IPConfig) (v4, v6 bool) {
	for _, ip := range ips {
		isV4 := ip.Address.IP.To4() != nil
		v4, v6 = v4 || isV4, v6 || !isV4
	}
	return v4, v6
}

// ipsOf returns the addresses of res that belong to ifname.
func ipsOf(ifname string, res *types.Result) ([]*types.IPConfig, error) {
	var out []*types.IPConfig
	for _, ip := range res.IPs {
		if ip.Interface == nil {
			continue
		}
		i := *ip.Interface
		if i < 0 || i >= len(res.Interfaces) {
			return nil, fmt.Errorf("address %v: invalid interface index %d", &ip.Address, i)
		}
		if res.Interfaces[i].Name == ifname {
			out = append(out, ip)
		}
	}
	return out, nil
}

// prepareSysctls writes the interface's settings that differ from what d
// shows: IPv6 ones through /proc/sys, arp_notify over netlink.
func prepareSysctls(d *ifconf.DevConf, hasV4, hasV6 bool, o ConfigureOptions) error {
	type setting struct {
		key   string
		value int
	}
	var sets []setting
	if hasV4 && !hasV6 { // IPv6 off: no address to detect duplicates of either
		sets = append(sets, setting{"disable_ipv6", 1})
	} else {
		if hasV6 {
			if err := ifconf.SetUnlessEqual("net/ipv6/conf/lo/disable_ipv6", "0"); err != nil {
				return err
			}
			sets = append(sets, setting{"disable_ipv6", 0}, setting{"keep_addr_on_down", 1})
		}
		if o.DAD {
			sets = append(sets, setting{"enhanced_dad", 1}, setting{"accept_dad", 1})
		} else {
			sets = append(sets, setting{"accept_dad", 0})
		}
	}
	for _, s := range sets {
		if err := d.EnsureIPv6(s.key, s.value); err != nil {
			return err
		}
	}
	if o.ArpNotify {
		return d.EnsureIPv4("arp_notify", 1)
	}
	return nil
}

// addAddrs adds the addresses and returns the first gateway of each family,
// indexed by netlink family.
func addAddrs(l netlink.Link, ips []*types.IPConfig, dad bool) (map[int]net.IP, error) {
	gws := map[int]net.IP{}
	for _, ip := range ips {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.Address.IP, Mask: ip.Address.Mask}}
		fam := Family(ip.Address.IP)
		if fam == netlink.FAMILY_V6 && !dad {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := netlink.AddrAdd(l, addr); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("adding address %v to %q: %w", addr.IPNet, l.Attrs().Name, err)
		}
		if ip.Gateway != nil && gws[fam] == nil {
			gws[fam] = ip.Gateway
		}
	}
	return gws, nil
}

func addRoutes(l netlink.Link, routes []*types.Route, gws map[int]net.IP) error {
	for _, r := range routes {
		nr := RouteFor(l.Attrs().Index, r, gws)
		if err := netlink.RouteAppend(nr); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("adding route %v via %v to %q: %w", &r.Dst, nr.Gw, l.Attrs().Name, err)
		}
	}
	return nil
}

// RouteFor turns a result route into a netlink route on link index; a route
// without a gateway uses the gateway of its family from gws, if any.
func RouteFor(index int, r *types.Route, gws map[int]net.IP) *netlink.Route {
	dst := r.Dst
	nr := &netlink.Route{LinkIndex: index, Dst: &dst, Gw: r.GW, Priority: r.Priority, MTU: r.MTU, AdvMSS: r.AdvMSS}
	if nr.Gw == nil {
		nr.Gw = gws[Family(r.Dst.IP)]
	}
	if r.Table != nil {
		nr.Table = *r.Table
	}
	if r.Scope != nil {
		nr.Scope = netlink.Scope(*r.Scope)
	}
	return nr
}

// waitDAD waits until no IPv6 address of l is tentative; it fails when DAD
// fails. It wakes on address notifications.
func waitDAD(ctx context.Context, l netlink.Link, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	updates := make(chan netlink.AddrUpdate, 64)
	done := make(chan struct{})
	defer func() {
		close(done)
		go func() {
			for range updates {
			}
		}()
	}()
	if err := netlink.AddrSubscribeWithOptions(updates, done, netlink.AddrSubscribeOptions{}); err != nil {
		return fmt.Errorf("subscribing to address updates: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	wake := (<-chan netlink.AddrUpdate)(updates)
	for {
		tentative, err := dadPending(l)
		if err != nil || !tentative {
			return err
		}
		select {
		case _, ok := <-wake:
			if !ok {
				return fmt.Errorf("waiting for DAD on %q: address subscription closed", l.Attrs().Name)
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for DAD on %q: %w", l.Attrs().Name, ctx.Err())
		case <-timer.C:
			return fmt.Errorf("%q: addresses still tentative after %v: %w", l.Attrs().Name, timeout, ErrDADFailed)
		}
	}
}

func dadPending(l netlink.Link) (bool, error) {
	addrs, err := AddrList(nil, l, netlink.FAMILY_V6)
	if err != nil {
		return false, fmt.Errorf("listing addresses of %q: %w", l.Attrs().Name, err)
	}
	pending := false
	for _, a := range addrs {
		if a.Flags&unix.IFA_F_DADFAILED != 0 {
			return false, fmt.Errorf("%q: address %v: %w", l.Attrs().Name, a.IPNet, ErrDADFailed)
		}
		if a.Flags&unix.IFA_F_TENTATIVE != 0 && !a.IP.IsLinkLocalUnicast() {
			pending = true
		}
	}
	return pending, nil
}
