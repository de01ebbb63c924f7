package main

import (
	"context"
	"fmt"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/records"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// The attachment's record (pkg/records) and its repair (pkg/resync): ADD
// records its input and result; cnisuite resync runs repair, and STATUS
// runs it as a dry run on one attachment of the network (resync.Status).

// writeRecord records what a repair of the attachment needs. The result
// is kept at the newest version: it lists the interfaces the spoof check
// and the isolation rules name, whatever version the runtime asked for.
func (at *attach) writeRecord() error {
	res, err := at.res.Encode(version.Current)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return at.p.records.WriteCall(firewall.PluginBridge, at.conf.Name, at.args, res)
}

// repair puts back the attachment's firewall rules and forwarding sysctls
// when they are gone (all of them unless dryRun) and says what was gone.
// The rules are built by desiredRules, as ADD builds them.
func (p *plugin) repair(ctx context.Context, r records.Record, dryRun bool) ([]string, error) {
	a := r.CmdArgs()
	a.Netns = "" // the node's side only
	conf, err := bridgeconf.Load(a.StdinData, a.Args)
	if err != nil {
		return nil, err
	}
	res, err := types.DecodeResult(r.Result, version.Current)
	if err != nil {
		return nil, fmt.Errorf("record's result: %w", err)
	}
	at, err := p.open(conf, a, false)
	if err != nil {
		return nil, err
	}
	defer at.close()
	at.res = res
	rules, err := at.desiredRules()
	if err != nil {
		return nil, err
	}
	return resync.Repair(ctx, dryRun, resync.Rules("firewall rules", at.rules, at.owner(), rules), at.forwarding())
}

// forwarding is the part of a repair that turns forwarding on again for
// the families of the gateways, as enableGateway does, and holds it again.
func (at *attach) forwarding() resync.Part {
	v4, v6 := at.gatewayFamilies()
	check := func(context.Context) ([]string, error) { return ifconf.ForwardingOff(v4, v6), nil }
	put := func(context.Context) error {
		if err := ifconf.EnableForwarding(v4, v6); err != nil {
			return err
		}
		return at.keepForwarding(v4, v6)
	}
	return resync.Part{Check: check, Put: put}
}

// gatewayFamilies reports which families have a gateway on the bridge.
func (at *attach) gatewayFamilies() (v4, v6 bool) {
	if !at.conf.IsGW || !at.conf.HasIPAM() {
		return false, false
	}
	for _, ip := range at.res.IPs {
		if ip.Gateway != nil {
			v4, v6 = v4 || ip.Gateway.To4() != nil, v6 || ip.Gateway.To4() == nil
		}
	}
	return v4, v6
}
