package main

import (
	"context"
	"errors"
	"fmt"

	"cnisuite/pkg/concurrent"
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/ipmath"
	"cnisuite/pkg/link"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/uplink"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// Indexes of the result's interfaces.
const (
	ifBridge    = 0
	ifHost      = 1
	ifContainer = 2
)

// cmdAdd attaches the container to the bridge: parse → IPAM → bridge →
// veth → container addresses → gateway → masquerade and spoof check → wait.
func (p *plugin) cmdAdd(ctx context.Context, a *skel.CmdArgs) (*types.Result, error) {
	conf, err := bridgeconf.Load(a.StdinData, a.Args)
	if err != nil {
		return nil, err
	}
	at, err := p.open(conf, a, true)
	if err != nil {
		return nil, err
	}
	defer at.close()
	return at.addOrUndo(ctx)
}

// addSteps are ADD's steps that act on the node; each pushes its inverse,
// when it has one, on the attachment's undo stack. The attachment itself
// does them (add.go, add_steps.go); a test's fake records them, so that
// the order of ADD, and of a failed ADD's undo, is checked without root.
type addSteps interface {
	runIPAM(context.Context) error
	ensureBridge(context.Context) error
	setupVeth(context.Context) error
	containerUp(context.Context) error
	configureContainer(context.Context) error
	enableGateway(context.Context) error
	waitPort(context.Context) error
	installRules(context.Context, firewall.Rules) error
	finishResult(context.Context) error
	writeRecord() error
}

// addOrUndo runs ADD's steps and records the attachment; when one fails,
// the inverses of the steps done run, last first.
func (at *attach) addOrUndo(ctx context.Context) (*types.Result, error) {
	res, err := at.add(ctx)
	if err == nil {
		err = at.steps.writeRecord()
	}
	if err != nil {
		if uerr := at.undo.Run(); uerr != nil && at.args.Stderr != nil {
			fmt.Fprintf(at.args.Stderr, "bridge: cleanup after failed ADD: %v\n", uerr)
		}
		return nil, err
	}
	return res, nil
}

// ipamNeedsNoInterface lists the IPAM plugins known to allocate without
// looking at the container's interface; others (dhcp asks for a lease on the
// interface itself) run after the veth exists, as in the reference plugin.
var ipamNeedsNoInterface = map[string]bool{"host-local": true, "static": true, "whereabouts": true}

// linksAndIPAM makes the bridge and veth and runs IPAM: at the same time
// when the IPAM plugin does not need the interface, else one after the other.
func (at *attach) linksAndIPAM(ipam, links func() error) error {
	if ipamNeedsNoInterface[at.conf.IPAM.Type] {
		return concurrent.First(concurrent.Run(ipam, links))
	}
	if err := links(); err != nil {
		return err
	}
	return ipam()
}

// add runs the steps of ADD. Steps that need nothing from each other run at
// the same time: IPAM (a process of its own) while the bridge and the veth
// are made, and the firewall transaction while the container is configured,
// the gateway set and the port awaited. With two failures, the error of the
// step the sequential order puts first is returned.
func (at *attach) add(ctx context.Context) (*types.Result, error) {
	at.res = &types.Result{CNIVersion: at.conf.CNIVersion}
	if err := at.uplinkMTU(); err != nil {
		return nil, err
	}
	ipam := func() error { return nil }
	if at.conf.HasIPAM() {
		ipam = func() error { return at.timed("ipam", at.steps.runIPAM)(ctx) }
	}
	links := func() error {
		// removeEmptyBridge: no DEL removes the bridge between our finding
		// it and our port joining it.
		release, err := at.lockBridge(ctx, true)
		if err != nil {
			return err
		}
		defer release()
		return at.sequence(ctx, at.timed("ensureBridge", at.steps.ensureBridge), at.timed("setupVeth", at.steps.setupVeth))
	}
	if err := at.linksAndIPAM(ipam, links); err != nil {
		return nil, err
	}
	rules, err := at.desiredRules()
	if err != nil {
		return nil, err
	}
	container := func() error { return at.sequence(ctx, at.containerSteps()...) }
	firewall := func() error {
		defer at.tm.Step("firewall")()
		return at.steps.installRules(ctx, rules)
	}
	if err := concurrent.First(concurrent.Run(container, firewall)); err != nil {
		return nil, err
	}
	return at.res, at.timed("finishResult", at.steps.finishResult)(ctx)
}

// sequence runs steps in order and stops at the first error.
func (at *attach) sequence(ctx context.Context, steps ...func(context.Context) error) error {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// runIPAM delegates to the IPAM plugin, registers its release, and fills
// the addresses, gateways and routes of the result.
func (at *attach) runIPAM(ctx context.Context) error {
	conf := at.conf
	ipamRes, err := invoke.AddIPAM(ctx, at.args, conf.IPAM.Type, conf.CNIVersion, &at.undo)
	if err != nil {
		return err
	}
	at.res.IPs, at.res.Routes, at.res.DNS = ipamRes.IPs, ipamRes.Routes, ipamRes.DNS
	for _, ip := range at.res.IPs {
		ip.Interface = types.Ptr(ifContainer)
		if conf.IsGW && ip.Gateway == nil {
			ip.Gateway = ipmath.FirstHost(ip.Address)
		}
	}
	if conf.IsDefaultGW {
		at.res.Routes = append(at.res.Routes, at.res.DefaultRoutes(conf.Metric)...)
	}
	return nil
}

// ensureBridge creates or adopts the bridge and pins its MAC.
func (at *attach) ensureBridge(context.Context) error {
	c := at.conf
	br, err := link.EnsureBridge(at.host, link.BridgeOptions{
		Name: c.BrName, MTU: c.MTU, Promisc: c.PromiscMode,
		VlanFiltering: c.Vlan != 0 || len(c.TrunkIDs()) > 0,
	})
	if err != nil {
		return bridgeError(c, err)
	}
	if err := link.EnsureMACPinned(at.host, br); err != nil {
		return err
	}
	at.br = br
	return nil
}

func bridgeError(c *bridgeconf.NetConf, err error) error {
	switch {
	case errors.Is(err, link.ErrNotBridge):
		return types.Errorf(types.ErrInvalidConfig, "bridge %q: already exists but is not a bridge: %w", c.BrName, err)
	case errors.Is(err, link.ErrVlanUnsupported):
		return types.Errorf(types.ErrNotAvailable, "vlan %d / vlanTrunk: %w", c.Vlan, err)
	}
	return err
}

// uplinkMTU sets the MTU to the uplink's (mtuFromUplink) when mtu is not
// set: that of the default route's interface in the bridge's VRF table,
// or the main one. Without a default route the kernel's default stays.
func (at *attach) uplinkMTU() error {
	c := at.conf
	if !c.MTUFromUplink || c.MTU != 0 {
		return nil
	}
	mtu, err := uplink.MTU(at.host, uplink.VRFTable(at.host, c.BrName))
	if err != nil {
		return fmt.Errorf("mtuFromUplink: %w", err)
	}
	c.MTU = mtu
	return nil
}
