package main

import (
	"context"
	"errors"
	"fmt"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/link"
	"cnisuite/pkg/records"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// cmdGC forwards GC to the IPAM plugin and removes the records and the
// masquerade and spoof-check rules of this network whose attachment is
// not among the valid ones, and the sysctl holds no attachment needs.
func (p *plugin) cmdGC(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := loadDelConf(a.StdinData, a.Stderr)
	if err != nil {
		return err
	}
	var errs []error
	if conf.HasIPAM() {
		if err := invoke.DelegateGC(ctx, a, conf.IPAM.Type, a.StdinData); err != nil {
			errs = append(errs, fmt.Errorf("ipam %q: %w", conf.IPAM.Type, err))
		}
	}
	// The records before the rules, each under its lock, as in DEL: a
	// repair running now finishes before, and none starts after, so none
	// puts the rules back (pkg/records); while a repair holds one past
	// GC's wait, the rules stay for the next GC (code 11).
	dropped, recErr := p.records.GC(ctx, firewall.PluginBridge, conf.Name, conf.GCAttachments())
	if errors.Is(recErr, records.ErrBusy) {
		return errors.Join(append(errs, types.Errorf(types.ErrTryAgain, "%w", recErr))...)
	}
	errs = append(errs, recErr)
	var keep []firewall.Owner
	for _, v := range conf.GCAttachments() {
		keep = append(keep, firewall.Owner{Plugin: firewall.PluginBridge, Network: conf.Name, ContainerID: v.ContainerID, IfName: v.IfName})
	}
	if (conf.IPMasq && conf.HasIPAM()) || conf.MacSpoofChk || conf.MayHaveIsolated() {
		fw, err := p.newRules(ctx, conf.Backend())
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		errs = append(errs, fw.GC(ctx, firewall.PluginBridge, conf.Name, keep))
	}
	// Then the sysctl holds no recorded attachment needs any more.
	errs = append(errs, resync.PruneHolds(p.records, firewall.PluginBridge, conf.Name, dropped))
	return errors.Join(errs...)
}

// cmdStatus reports whether the bridge can be used (a name taken by another
// kind of link cannot), whether the network's attachments lost their rules
// or forwarding (code 51, resync.Status), and asks the IPAM plugin for
// its own status. The
// IPAM plugin is started first and the bridge looked at while it runs:
// containerd asks every few seconds, and the process start is most of it.
func (p *plugin) cmdStatus(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := loadDelConf(a.StdinData, a.Stderr)
	if err != nil {
		return err
	}
	ipam := make(chan error, 1)
	if conf.HasIPAM() {
		go func() { ipam <- invoke.DelegateStatus(ctx, a, conf.IPAM.Type, a.StdinData) }()
	} else {
		ipam <- nil
	}
	bridgeErr := p.bridgeUsable(conf)
	if bridgeErr == nil {
		bridgeErr = resync.Status(ctx, p.records, firewall.PluginBridge, conf.Name, p.repair)
	}
	ipamErr := <-ipam
	if bridgeErr != nil || ipamErr == nil {
		return bridgeErr
	}
	return fmt.Errorf("ipam %q: %w", conf.IPAM.Type, ipamErr)
}

// bridgeUsable fails with code 50 when the bridge's name is taken by a link
// of another kind.
func (p *plugin) bridgeUsable(conf *bridgeconf.NetConf) error {
	at, err := p.open(conf, &skel.CmdArgs{}, false)
	if err != nil {
		return err
	}
	defer at.close()
	if _, err := link.LookupBridge(at.host, conf.BrName); errors.Is(err, link.ErrNotBridge) {
		return types.Errorf(types.ErrNotAvailable, "bridge %q: cannot be used: %w", conf.BrName, err)
	}
	return nil
}
