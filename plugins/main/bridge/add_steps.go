package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/link"
	"cnisuite/pkg/linkops"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
	"cnisuite/pkg/vlanplan"
)

// setupVeth creates the veth pair, makes the host end a port of the bridge
// with its flags and VLANs, and lists the interfaces in the result.
func (at *attach) setupVeth(context.Context) error {
	c, a := at.conf, at.args
	hostName, exact := c.HostVethName(a.ContainerID, a.IfName)
	pair, err := link.CreateVeth(at.host, at.cont, link.VethOptions{
		ContainerName: a.IfName, ContainerNS: int(at.netns.Fd()),
		HostName: hostName, HostPrefix: c.HostVethPrefix, HostNameExact: exact, MTU: c.MTU, MAC: c.MAC(),
	})
	if errors.Is(err, link.ErrContainerIfaceExists) {
		return types.Errorf(types.ErrInvalidEnv, "CNI_IFNAME %q: %w", a.IfName, err)
	}
	if errors.Is(err, link.ErrHostNameTaken) {
		// Code 11, as for a host port or an address another pod holds:
		// the name frees when that link goes.
		return types.Errorf(types.ErrTryAgain, "args.cni.hostVethName %w", err)
	}
	if err != nil {
		return err
	}
	hostName = pair.Host.Attrs().Name
	at.undo.Push("veth "+hostName, func() error { return link.DeleteLink(at.host, hostName) })
	if err := ifconf.DisableRA(hostName); err != nil {
		return err
	}
	if err := link.NoLinkLocal(at.host, pair.Host); err != nil {
		return err
	}
	opts := link.PortOptions{Hairpin: c.HairpinMode, Isolated: c.PortIsolation}
	if err := link.AttachPort(at.host, pair.Host, at.br, opts); err != nil {
		return err
	}
	if plan := vlanplan.ForPort(c.Vlan, c.TrunkIDs(), c.PreserveDefaultVlan); !plan.Empty() {
		if err := link.ApplyPortVlans(at.host, pair.Host, plan); err != nil {
			return bridgeError(c, err)
		}
	}
	at.res.Interfaces = []*types.Interface{
		{Name: c.BrName},
		{Name: hostName},
		{Name: a.IfName, Mac: pair.Container.Attrs().HardwareAddr.String(), Mtu: at.resultMTU(pair.Container), Sandbox: a.Netns},
	}
	return nil
}

// containerSteps orders the container's side of ADD. With enabledad and an
// IPv6 address the container interface comes up and its bridge port
// forwards before any address is added: duplicate address detection must
// send its probe through the bridge, or it passes on a port that does not
// forward yet. Otherwise addresses go on first and the port is awaited
// last, which overlaps the port's wait with the address work (and an
// IPv4-only interface has IPv6 off before it is ever up).
func (at *attach) containerSteps() []func(context.Context) error {
	configure := at.timed("configureContainer", at.steps.configureContainer)
	gateway := at.timed("enableGateway", at.steps.enableGateway)
	port := at.timed("waitPort", at.steps.waitPort)
	c := at.conf
	if _, v6 := link.AddrFamilies(at.res.IPs); c.EnableDad && c.HasIPAM() && !c.DisableContainerInterface && v6 {
		return []func(context.Context) error{at.timed("containerUp", at.steps.containerUp), port, configure, gateway}
	}
	return []func(context.Context) error{configure, gateway, port}
}

// containerUp sets the container interface up, with no address yet.
func (at *attach) containerUp(context.Context) error {
	return at.netns.Do(func() error { return upInContainer(at.args.IfName) })
}

// upInContainer sets ifname up; it runs inside the container's namespace.
func upInContainer(ifname string) error {
	links := linkops.Netlink{} // in the container's namespace
	l, err := links.Get(ifname)
	if err != nil {
		return fmt.Errorf("looking up %q in the container: %w", ifname, err)
	}
	return links.SetUp(l, true)
}

// configureContainer gives the container interface its addresses and routes
// (layer 3) or only sets it up (layer 2), inside the container.
func (at *attach) configureContainer(ctx context.Context) error {
	c, ifname := at.conf, at.args.IfName
	if c.DisableContainerInterface {
		return nil
	}
	return at.netns.Do(func() error {
		if !c.HasIPAM() {
			return upInContainer(ifname)
		}
		err := link.ConfigureIface(ctx, ifname, at.res, link.ConfigureOptions{DAD: c.EnableDad, ArpNotify: true})
		if errors.Is(err, link.ErrDADFailed) {
			return types.Errorf(types.ErrTryAgain, "enabledad: %w", err)
		}
		return err
	})
}

// enableGateway puts the gateway addresses on the bridge (or on the VLAN's
// gateway interface) and turns on forwarding for their families.
func (at *attach) enableGateway(context.Context) error {
	c := at.conf
	if !c.IsGW || !c.HasIPAM() {
		return nil
	}
	var target netlink.Link = at.br
	if c.Vlan != 0 {
		gw, err := link.EnsureVlanGateway(at.host, at.br, c.Vlan, c.MTU)
		if err != nil {
			return bridgeError(c, err)
		}
		target = gw
		at.res.Interfaces = append(at.res.Interfaces, &types.Interface{Name: gw.Attrs().Name})
	}
	var gws []*net.IPNet
	for _, ip := range at.res.IPs {
		if ip.Gateway != nil {
			gws = append(gws, &net.IPNet{IP: ip.Gateway, Mask: ip.Address.Mask})
		}
	}
	v4, v6 := at.gatewayFamilies()
	if err := link.EnsureAddrs(at.host, target, gws, c.ForceAddress); err != nil {
		if errors.Is(err, link.ErrAddressConflict) {
			return types.Errorf(types.ErrInvalidConfig, "bridge %q gateway (set forceAddress to replace): %w", target.Attrs().Name, err)
		}
		return err
	}
	if err := ifconf.EnableForwarding(v4, v6); err != nil {
		return err
	}
	return at.keepForwarding(v4, v6)
}

// keepForwarding records that the attachment needs forwarding, so that
// `sysctl --system` keeps it on (pkg/sysctlkeep); DEL and a failed ADD
// let go.
func (at *attach) keepForwarding(v4, v6 bool) error {
	if err := (sysctlkeep.Keeper{}).HoldForwarding(v4, v6, at.sysctlHolder(), &at.undo); err != nil {
		return types.Errorf(types.ErrIO, "isGateway: %w", err)
	}
	return nil
}

func (at *attach) sysctlHolder() string {
	return sysctlkeep.Holder("bridge", at.conf.Name, at.args.ContainerID, at.args.IfName)
}

// installRules installs the rules r, computed beforehand so that it reads
// nothing that steps running at the same time change.
func (at *attach) installRules(ctx context.Context, r firewall.Rules) error {
	if r.Empty() {
		return nil
	}
	fw, err := at.rules(ctx)
	if err != nil {
		return err
	}
	o := at.owner()
	if err := fw.Ensure(ctx, o, r); err != nil {
		return fmt.Errorf("ipMasq/macspoofchk/icc/isolate rules: %w", err)
	}
	at.undo.Push("firewall rules", func() error { return fw.Remove(context.WithoutCancel(ctx), o) })
	return nil
}

// desiredRules returns the firewall rules the configuration asks for, from
// the result being built (ADD) or the prevResult (CHECK).
func (at *attach) desiredRules() (firewall.Rules, error) {
	var r firewall.Rules
	if at.conf.IPMasq && at.conf.HasIPAM() {
		for _, n := range at.resultNets() {
			r.Masq = append(r.Masq, firewall.Masq{Addr: *n, Source: at.conf.MasqSource(n.IP)})
		}
	}
	if at.conf.Isolates() {
		iso, err := at.desiredIsolation()
		if err != nil {
			return r, err
		}
		r.Isolation = iso
	}
	if !at.conf.MacSpoofChk {
		return r, nil
	}
	if len(at.res.Interfaces) <= ifContainer {
		return r, types.Errorf(types.ErrInvalidConfig, "macspoofchk: result lists no container interface")
	}
	c := at.res.Interfaces[ifContainer]
	mac, err := net.ParseMAC(c.Mac)
	if err != nil {
		return r, types.Errorf(types.ErrInvalidConfig, "macspoofchk: container MAC %q: %w", c.Mac, err)
	}
	sc := &firewall.SpoofCheck{HostIface: at.res.Interfaces[ifHost].Name, MAC: mac}
	for _, ip := range at.res.IPs {
		sc.IPs = append(sc.IPs, ip.Address.IP)
	}
	r.SpoofCheck = sc
	return r, nil
}

func (at *attach) resultNets() []*net.IPNet {
	var nets []*net.IPNet
	for _, ip := range at.res.IPs {
		n := ip.Address
		nets = append(nets, &n)
	}
	return nets
}

// waitPort returns once the host port forwards (bounded).
func (at *attach) waitPort(ctx context.Context) error {
	if at.conf.DisableContainerInterface {
		return nil
	}
	name := at.res.Interfaces[ifHost].Name
	l, err := link.WaitForwarding(ctx, name, at.p.portTimeout)
	if err != nil {
		return types.Errorf(types.ErrTryAgain, "bridge port %q: %w", name, err)
	}
	at.hostLink = l
	return nil
}

// finishResult fills in the MACs of the host side and applies the
// configured DNS. The bridge MAC is pinned (ensureBridge), so enslaving the
// port did not change it; the host veth was read when its port was awaited,
// after every change made to it.
func (at *attach) finishResult(context.Context) error {
	at.res.Interfaces[ifBridge].Mac = at.br.HardwareAddr.String()
	if at.hostLink == nil {
		name := at.res.Interfaces[ifHost].Name
		l, err := at.host.LinkByName(name)
		if err != nil {
			return fmt.Errorf("reading %q: %w", name, err)
		}
		at.hostLink = l
	}
	at.res.Interfaces[ifHost].Mac = at.hostLink.Attrs().HardwareAddr.String()
	at.res.Interfaces[ifHost].Mtu = at.resultMTU(at.hostLink)
	// The bridge's MTU follows its ports' unless one was set: read it
	// after the port joined.
	if br, err := at.host.LinkByIndex(at.br.Index); err == nil && at.resultHasMTU() {
		at.res.Interfaces[ifBridge].Mtu = br.Attrs().MTU
	}
	for _, i := range at.res.Interfaces[ifContainer+1:] {
		if l, err := at.host.LinkByName(i.Name); err == nil {
			i.Mac, i.Mtu = l.Attrs().HardwareAddr.String(), at.resultMTU(l)
		}
	}
	if !at.conf.DNS.IsEmpty() {
		at.res.DNS = at.conf.DNS
	}
	return nil
}

// resultHasMTU reports whether the result's interfaces carry their MTU: a
// key of cniVersion 1.1.0.
func (at *attach) resultHasMTU() bool { return version.AtLeast(at.conf.CNIVersion, "1.1.0") }

// resultMTU is l's MTU for the result, 0 (left out) before 1.1.0.
func (at *attach) resultMTU(l netlink.Link) int {
	if !at.resultHasMTU() {
		return 0
	}
	return l.Attrs().MTU
}
