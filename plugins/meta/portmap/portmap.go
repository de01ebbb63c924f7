package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"cnisuite/pkg/concurrent"
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/pkg/types"
	"cnisuite/pkg/undo"
)

// errNoRoute is EnableLocalnet's answer when the node has no route to the
// container's address (yet): routes may come from a later plugin of the
// chain or from a routing daemon.
var errNoRoute = errors.New("the node has no route to the container's address")

// hostOps are the node-side kernel calls besides the firewall.
type hostOps interface {
	// EnableLocalnet sets route_localnet on the interface routing to ip,
	// and keeps it set for holder across `sysctl --system`; it wraps
	// errNoRoute when there is no such interface.
	EnableLocalnet(ip net.IP, holder string) error
	// ReleaseLocalnet lets go of what EnableLocalnet kept for holder.
	ReleaseLocalnet(holder string) error
	// LocalnetOn reports whether route_localnet is on for the interface
	// routing to ip (true without such a route: nothing to put back).
	LocalnetOn(ip net.IP) bool
	// FlushUDP deletes the UDP conntrack entries of the flows the spans
	// catch: original destination port in a span, to its host address or,
	// without one, to an address of the node.
	FlushUDP(v4 bool, spans []portSpan) error
}

// portSpan is host ports First to Last of a mapping, on its Host address
// (nil, or unspecified: every address of the node).
type portSpan struct {
	First, Last int
	Host        net.IP
}

// String writes "5353", or "8000-8100" for a range.
func (s portSpan) String() string {
	if s.Last > s.First {
		return fmt.Sprintf("%d-%d", s.First, s.Last)
	}
	return fmt.Sprint(s.First)
}

// plugin holds the seams of the portmap verbs.
type plugin struct {
	newBackend func(ctx context.Context, kind string) (firewall.Backend, error)
	host       hostOps
	records    records.Store
}

func owner(c *Config, a *skel.CmdArgs) firewall.Owner {
	return firewall.Owner{Plugin: firewall.PluginPortmap, Network: c.Name, ContainerID: a.ContainerID, IfName: a.IfName}
}

func (p *plugin) backend(ctx context.Context, c *Config) (firewall.Backend, error) {
	kind, err := c.backendKind()
	if err != nil {
		return nil, err
	}
	return p.newBackend(ctx, kind)
}

// load reads the configuration and opens the backend it names.
func (p *plugin) load(ctx context.Context, a *skel.CmdArgs) (*Config, firewall.Backend, error) {
	c, err := Load(a.StdinData)
	if err != nil {
		return nil, nil, err
	}
	be, err := p.backend(ctx, c)
	return c, be, err
}

// Add installs the mappings for the container's first IPv4 and IPv6
// address and passes prevResult on.
func (p *plugin) Add(ctx context.Context, a *skel.CmdArgs) (*types.Result, error) {
	c, err := Load(a.StdinData)
	if err != nil {
		return nil, err
	}
	warnUnknownKeys(a)
	prev, err := c.RequirePrevResult("portmap", "ADD")
	if err != nil {
		return nil, err
	}
	v4, v6 := containerAddrs(prev, a.IfName)
	if len(c.RuntimeConfig.PortMaps) == 0 || v4 == nil && v6 == nil {
		return prev, nil
	}
	be, err := p.backend(ctx, c)
	if err != nil {
		return nil, err
	}
	pm := c.portMaps(v4, v6)
	if a.Log.Debugging() {
		a.Log.Debug("portMappings", describe(pm))
	}
	// The rules and route_localnet need nothing of each other: they are
	// set at the same time. A failure of either, or of the record, fails
	// the ADD, which then removes what it wrote of the rules (with their
	// host port claims; iptables writes each family on its own, so one may
	// be in place when the other failed) and lets go of its route_localnet
	// hold (the value stays, as after a DEL: other pods may need it).
	var u undo.Stack
	u.Push("route_localnet hold", func() error { return p.host.ReleaseLocalnet(sysctlHolder(c, a)) })
	u.Push("port mappings", func() error { return be.Remove(ctx, owner(c, a)) })
	rules := func() error {
		defer a.Log.Step("firewall")()
		return be.Ensure(ctx, owner(c, a), firewall.Rules{PortMaps: pm})
	}
	localnet := func() error {
		if v4 == nil || !pm.SNAT || pm.MasqAll {
			return nil
		}
		return p.enableLocalnet(c, a, v4.IP)
	}
	err = concurrent.First(concurrent.Run(rules, localnet))
	if err == nil {
		err = p.writeRecord(c, a)
	}
	if err != nil {
		if uerr := u.Run(); uerr != nil && a.Stderr != nil {
			fmt.Fprintf(a.Stderr, "portmap: cleanup after failed ADD: %v\n", uerr)
		}
		return nil, err
	}
	p.flushUDP(a, pm.Mappings, v4 != nil, v6 != nil)
	return prev, nil
}

// sysctlHolder names the attachment among the holders of node sysctls.
func sysctlHolder(c *Config, a *skel.CmdArgs) string {
	return sysctlkeep.Holder("portmap", c.Name, a.ContainerID, a.IfName)
}

// enableLocalnet lets 127.0.0.1:hostPort reach the container. Without a
// route to the container the mappings stay in place, as the reference
// plugin keeps them: only the 127.0.0.1 ones cannot work until a route
// exists, and stderr says so.
func (p *plugin) enableLocalnet(c *Config, a *skel.CmdArgs, ip net.IP) error {
	done := a.Log.Step("routeLocalnet")
	err := p.host.EnableLocalnet(ip, sysctlHolder(c, a))
	done()
	if errors.Is(err, errNoRoute) {
		if a.Stderr != nil {
			fmt.Fprintf(a.Stderr, "portmap: %v; mappings from 127.0.0.1 need a route to %s and "+
				"route_localnet on its interface, so they will not work until both exist\n", err, ip)
		}
		return nil
	}
	if err != nil {
		return types.Errorf(types.ErrIO, "route_localnet for %s: %w", ip, err)
	}
	return nil
}

// flushUDP drops UDP conntrack entries of the host ports, every port of a
// range, after the rules are in place, so a replaced container gets the
// flow at once. Failures are reported on stderr only: the mappings
// themselves work.
func (p *plugin) flushUDP(a *skel.CmdArgs, ms []firewall.PortMapping, v4, v6 bool) {
	for _, fam := range []struct{ on, v4 bool }{{v4, true}, {v6, false}} {
		var ports []portSpan
		for _, m := range ms {
			if m.Protocol == "udp" && (m.HostIP == nil || (m.HostIP.To4() != nil) == fam.v4) {
				ports = append(ports, portSpan{First: m.HostPort, Last: m.HostLast(), Host: m.HostIP})
			}
		}
		if fam.on && len(ports) > 0 {
			if err := p.host.FlushUDP(fam.v4, ports); err != nil && a.Stderr != nil {
				fmt.Fprintf(a.Stderr, "portmap: flushing UDP conntrack entries of ports %v: %v\n", ports, err)
			}
		}
	}
}

// Del removes the attachment's rules, whatever the runtime passes: no
// portMappings, no prevResult and no netns are all fine. UDP conntrack
// entries of the host ports are flushed afterwards, the ports taken from
// portMappings or, without them, from the rules being removed.
func (p *plugin) Del(ctx context.Context, a *skel.CmdArgs) error {
	c, err := loadForDel(a)
	if err != nil {
		return err
	}
	be, err := p.backend(ctx, c)
	if err != nil {
		return err
	}
	ms := c.mappings()
	if mr, ok := be.(firewall.MappingReader); ok && len(ms) == 0 {
		// The runtime passed no portMappings: the rules tell which host
		// ports had UDP flows to flush.
		ms, _ = mr.Mapped(ctx, owner(c, a))
	}
	done := a.Log.Step("firewall")
	// The record first: a repair running now finishes before, and none
	// starts after, so none puts the rules back (pkg/records).
	recErr := p.removeRecord(c, a)
	err = errors.Join(recErr, be.Remove(ctx, owner(c, a)), p.host.ReleaseLocalnet(sysctlHolder(c, a)))
	done()
	if err != nil {
		return err
	}
	p.flushUDP(a, ms, true, true)
	return nil
}

// loadForDel reads the configuration for DEL. One that does not validate
// (ADD refused it, and wrote nothing) still names the network: its
// options are dropped, said on stderr, and the attachment's rules, if an
// earlier configuration made any, are removed by owner as usual.
func loadForDel(a *skel.CmdArgs) (*Config, error) {
	c, err := decode(a.StdinData)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		fmt.Fprintf(a.Stderr, "portmap: DEL goes on with the default options: %v\n", err)
		c = &Config{NetConf: c.NetConf}
	}
	return c, nil
}

// Check fails when any rule of the attachment's mappings is missing.
func (p *plugin) Check(ctx context.Context, a *skel.CmdArgs) error {
	c, err := Load(a.StdinData)
	if err != nil {
		return err
	}
	prev, err := c.RequirePrevResult("portmap", "CHECK")
	if err != nil {
		return err
	}
	v4, v6 := containerAddrs(prev, a.IfName)
	if len(c.RuntimeConfig.PortMaps) == 0 || v4 == nil && v6 == nil {
		return nil
	}
	be, err := p.backend(ctx, c)
	if err != nil {
		return err
	}
	return be.Check(ctx, owner(c, a), firewall.Rules{PortMaps: c.portMaps(v4, v6)})
}

// GC removes the network's rules whose attachment is not valid any more.
// The records go first, each under its lock, as in DEL: a repair running
// now finishes before, and none starts after, so none puts the rules back
// (pkg/records); while a repair holds one past GC's wait, the rules stay
// for the next GC (code 11).
func (p *plugin) GC(ctx context.Context, a *skel.CmdArgs) error {
	c, be, err := p.load(ctx, a)
	if err != nil {
		return err
	}
	dropped, recErr := p.records.GC(ctx, firewall.PluginPortmap, c.Name, c.GCAttachments())
	if errors.Is(recErr, records.ErrBusy) {
		return types.Errorf(types.ErrTryAgain, "%w", recErr)
	}
	var keep []firewall.Owner
	for _, at := range c.GCAttachments() {
		keep = append(keep, firewall.Owner{ContainerID: at.ContainerID, IfName: at.IfName})
	}
	// Then the sysctl holds no recorded attachment needs any more.
	return errors.Join(recErr, be.GC(ctx, firewall.PluginPortmap, c.Name, keep),
		resync.PruneHolds(p.records, firewall.PluginPortmap, c.Name, dropped))
}

// Status reports 50 when the chosen backend cannot work on this node, and
// 51 when the network's attachments lost their mappings (resync.Status).
func (p *plugin) Status(ctx context.Context, a *skel.CmdArgs) error {
	c, err := Load(a.StdinData)
	if err != nil {
		return err
	}
	kind, err := c.backendKind()
	if err != nil {
		return err
	}
	be, err := p.newBackend(ctx, kind)
	if err == nil {
		err = be.Usable(ctx)
	}
	if err != nil && !errors.Is(err, types.ErrNotAvailable) && !errors.Is(err, types.ErrInvalidConfig) {
		return types.Errorf(types.ErrNotAvailable, "portmap: %w", err)
	}
	if err != nil {
		return err
	}
	return resync.Status(ctx, p.records, firewall.PluginPortmap, c.Name, p.repair)
}

// containerAddrs returns the first IPv4 and IPv6 address of the container
// interface ifName: addresses of another interface or of a host-side one
// (no sandbox) are skipped; addresses naming no interface are taken.
func containerAddrs(r *types.Result, ifName string) (v4, v6 *net.IPNet) {
	for _, ip := range r.IPs {
		if i := ip.Interface; i != nil {
			if *i < 0 || *i >= len(r.Interfaces) {
				continue
			}
			if iface := r.Interfaces[*i]; iface.Name != ifName || iface.Sandbox == "" {
				continue
			}
		}
		addr := ip.Address
		switch {
		case addr.IP.To4() != nil && v4 == nil:
			v4 = &net.IPNet{IP: addr.IP.To4(), Mask: addr.Mask[len(addr.Mask)-net.IPv4len:]}
		case addr.IP.To4() == nil && v6 == nil:
			v6 = &net.IPNet{IP: addr.IP, Mask: addr.Mask}
		}
	}
	return v4, v6
}

// describe renders the mappings for the per-call log, one per container
// address: "0.0.0.0:8080/tcp -> 10.88.0.2:80".
func describe(pm *firewall.PortMaps) []string {
	var out []string
	for _, ctr := range []*net.IPNet{pm.ContainerV4, pm.ContainerV6} {
		for _, m := range pm.Mappings {
			if ctr == nil || m.HostIP != nil && !m.HostIP.IsUnspecified() && (m.HostIP.To4() != nil) != (ctr.IP.To4() != nil) {
				continue
			}
			host := "*"
			if m.HostIP != nil {
				host = m.HostIP.String()
			}
			ctrPorts := fmt.Sprint(m.ContainerPort)
			if m.IsRange() {
				ctrPorts = fmt.Sprintf("%d-%d", m.ContainerPort, m.ContainerLast())
			}
			out = append(out, fmt.Sprintf("%s/%s -> %s",
				net.JoinHostPort(host, m.HostPorts()), m.Protocol, net.JoinHostPort(ctr.IP.String(), ctrPorts)))
		}
	}
	return out
}

// warnUnknownKeys says, on stderr and in the per-call log, which keys of
// the port mappings ADD ignores.
func warnUnknownKeys(a *skel.CmdArgs) {
	for _, k := range UnknownMappingKeys(a.StdinData) {
		msg := "ignoring " + k + ": not a key of a port mapping (hostPort, containerPort, protocol, hostIP)"
		if a.Stderr != nil {
			fmt.Fprintf(a.Stderr, "portmap: %s\n", msg)
		}
		a.Log.Warn(msg)
	}
}
