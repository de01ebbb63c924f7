package main

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/concurrent"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/link"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/vlanplan"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// cmdCheck verifies that what the prevResult lists still exists: the bridge,
// the veth pair and its port, the container's addresses and routes, and the
// masquerade rules. IPAM CHECK runs only when there is an IPAM.
func (p *plugin) cmdCheck(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := bridgeconf.Load(a.StdinData, a.Args)
	if err != nil {
		return err
	}
	prev, err := conf.RequirePrevResult("bridge", "CHECK")
	if err != nil {
		return err
	}
	// IPAM CHECK (a process of its own) runs while the links and rules are
	// checked; its error comes first, as if it had run first.
	ipam := func() error {
		if !conf.HasIPAM() {
			return nil
		}
		if err := invoke.DelegateCheck(ctx, a, conf.IPAM.Type, a.StdinData); err != nil {
			return fmt.Errorf("ipam %q: %w", conf.IPAM.Type, err)
		}
		return nil
	}
	local := func() error {
		at, err := p.open(conf, a, true)
		if err != nil {
			return err
		}
		defer at.close()
		at.res = prev
		return at.sequence(ctx, at.checkBridge, at.checkVeth, at.checkVlans, at.checkContainer, at.checkRules)
	}
	return concurrent.First(concurrent.Run(ipam, local))
}

func missing(format string, a ...any) error {
	return types.Errorf(types.ErrUnknownContainer, format, a...)
}

// findIface returns the prevResult interface called name in sandbox.
func (at *attach) findIface(name, sandbox string) *types.Interface {
	for _, i := range at.res.Interfaces {
		if i.Name == name && i.Sandbox == sandbox {
			return i
		}
	}
	return nil
}

func (at *attach) checkBridge(context.Context) error {
	c := at.conf
	want := at.findIface(c.BrName, "")
	if want == nil {
		return missing("prevResult: no interface for bridge %q", c.BrName)
	}
	br, err := link.LookupBridge(at.host, c.BrName)
	if err != nil {
		return missing("bridge %q: %w", c.BrName, err)
	}
	if err := link.CheckAttrs(&br.LinkAttrs, want); err != nil {
		return fmt.Errorf("bridge %q: %w", c.BrName, err)
	}
	if on := br.Promisc != 0; on != c.PromiscMode {
		return fmt.Errorf("bridge %q: promiscuous mode is %v, promiscMode is %v", c.BrName, on, c.PromiscMode)
	}
	at.br = br
	return nil
}

// checkVeth finds the container end and a host veth of prevResult that is
// its peer and a port of the bridge.
func (at *attach) checkVeth(context.Context) error {
	a := at.args
	want := at.findIface(a.IfName, a.Netns)
	if want == nil {
		return missing("prevResult: no interface %q in sandbox %q", a.IfName, a.Netns)
	}
	l, err := at.cont.LinkByName(a.IfName)
	if err != nil {
		return missing("container interface %q: %w", a.IfName, err)
	}
	veth, ok := l.(*netlink.Veth)
	if !ok {
		return fmt.Errorf("container interface %q: a %s, not a veth", a.IfName, l.Type())
	}
	if err := link.CheckAttrs(l.Attrs(), want); err != nil {
		return fmt.Errorf("container interface %q: %w", a.IfName, err)
	}
	// The kernel reports a veth's peer as its link (IFLA_LINK); ethtool
	// inside the namespace is the fallback.
	peer := veth.ParentIndex
	if peer == 0 {
		if err := at.netns.Do(func() error { peer, err = netlink.VethPeerIndex(veth); return err }); err != nil {
			return fmt.Errorf("container interface %q: reading its peer: %w", a.IfName, err)
		}
	}
	for _, i := range at.res.Interfaces {
		if i.Sandbox != "" {
			continue
		}
		h, err := at.host.LinkByName(i.Name)
		if err == nil && h.Attrs().Index == peer && h.Attrs().MasterIndex == at.br.Index {
			at.hostLink = h
			return nil
		}
	}
	return missing("CNI veth created for bridge %q was not found (peer of %q)", at.conf.BrName, a.IfName)
}

// checkVlans compares the host port's VLANs with what vlan, vlanTrunk and
// preserveDefaultVlan ask for: every planned VLAN with its PVID and untagged
// flags, and, unless the existing VLANs are preserved, nothing more.
func (at *attach) checkVlans(context.Context) error {
	c := at.conf
	plan := vlanplan.ForPort(c.Vlan, c.TrunkIDs(), c.PreserveDefaultVlan)
	if plan.Empty() {
		return nil
	}
	got, err := link.PortVlans(at.host, at.hostLink)
	if err != nil {
		return err
	}
	return plan.Check(at.hostLink.Attrs().Name, got)
}

func (at *attach) checkContainer(context.Context) error {
	if !at.conf.HasIPAM() {
		return nil
	}
	return at.netns.Do(func() error {
		if err := link.VerifyIface(at.args.IfName, at.res); err != nil {
			return missing("container %q: %w", at.args.IfName, err)
		}
		return nil
	})
}

func (at *attach) checkRules(ctx context.Context) error {
	r, err := at.desiredRules()
	if err != nil || r.Empty() {
		return err
	}
	fw, err := at.rules(ctx)
	if err != nil {
		return err
	}
	if err := fw.Check(ctx, at.owner(), r); err != nil {
		return fmt.Errorf("ipMasq/macspoofchk rules: %w", err)
	}
	return nil
}
