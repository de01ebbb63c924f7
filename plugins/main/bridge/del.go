package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cnisuite/pkg/concurrent"
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/pkg/types"
	"cnisuite/pkg/vethdel"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// cmdDel removes everything the attachment's ADD made: the veth pair, the
// IPAM lease, the masquerade and spoof-check rules, the attachment's
// record (pkg/records). Absence of any of them —
// of the netns, the interface, the prevResult — is success; so is a second
// DEL. Real failures are joined and returned.
func (p *plugin) cmdDel(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := loadDelConf(a.StdinData, a.Stderr)
	if err != nil {
		return err
	}
	at, err := p.open(conf, a, false)
	if err != nil {
		return err
	}
	defer at.close()
	// The three removals are independent, and run at the same time: deleting
	// a veth returns only after the kernel's RCU barrier (10-25 ms here,
	// whatever else happens), time in which the lease and the rules go.
	ipam := func() error {
		if !conf.HasIPAM() {
			return nil
		}
		defer at.tm.Step("ipam")()
		if err := invoke.DelegateDel(ctx, a, conf.IPAM.Type, a.StdinData); err != nil {
			return fmt.Errorf("ipam %q: %w", conf.IPAM.Type, err)
		}
		return nil
	}
	rules := func() error {
		defer at.tm.Step("removeRules")()
		return at.removeRules(ctx)
	}
	sysctls := func() error {
		if !conf.IsGW && !conf.IsDefaultGW {
			return nil
		}
		return sysctlkeep.Keeper{}.Release(at.sysctlHolder())
	}
	// The record first: a repair running now finishes before, and none
	// starts after, so none puts the rules back (pkg/records).
	recErr := at.p.records.Remove(firewall.PluginBridge, conf.Name, a.ContainerID, a.IfName)
	if err := errors.Join(append(concurrent.Run(at.removeVeth, ipam, rules, sysctls), recErr)...); err != nil {
		return err
	}
	return at.removeBridgeIfEmpty(ctx)
}

// loadDelConf reads the configuration for DEL: CNI_ARGS are not needed and
// their errors do not stop the cleanup; nor does a bad MAC or VLAN setting,
// nor a bridge name that ADD refused (no link can have it, so no port of it
// is looked for; the lease and rules of the attachment still go).
func loadDelConf(data []byte, stderr io.Writer) (*bridgeconf.NetConf, error) {
	conf, err := bridgeconf.Decode(data)
	if err != nil {
		return nil, err
	}
	if err := types.ValidateLinkName("bridge", conf.BrName); err != nil {
		fmt.Fprintf(stderr, "bridge: DEL goes on without a bridge: %v\n", err)
		conf.BrName = ""
	}
	if err := bridgeconf.ValidateIPAMType(conf.IPAM.Type); err != nil {
		// ADD refused it: it leased nothing through it.
		fmt.Fprintf(stderr, "bridge: DEL goes on without IPAM: %v\n", err)
		conf.IPAM.Type = ""
	}
	if conf.CNIVersion == "" {
		conf.CNIVersion = "0.1.0"
	}
	return conf, nil
}

// removeVeth deletes the container interface inside the netns (which takes
// its host peer along) and then the host end wherever it is still found.
// A host link is deleted only when it is provably this attachment's (see
// vethdel.Pair): prevResult may be stale or forged, and names only a
// candidate.
func (at *attach) removeVeth() error {
	defer at.tm.Step("removeVeth")()
	a := at.args
	ours, exact := at.conf.HostVethName(at.args.ContainerID, at.args.IfName)
	prev := at.prevHostVeth()
	pair := vethdel.Pair{Host: at.host, Cont: at.cont, NetNS: at.netns, Bridge: at.conf.BrName}
	if err := pair.DeleteContainerEnd(a.IfName, []string{ours, prev}); err != nil {
		return fmt.Errorf("deleting %q in %q: %w", a.IfName, a.Netns, err)
	}
	// A name the pod asked for is no proof of ownership (another link may
	// hold it): only the hashed name is.
	errs := []error{pair.DeleteHostPort(ours, !exact)}
	if prev != "" && prev != ours {
		errs = append(errs, pair.DeleteHostPort(prev, false))
	}
	return errors.Join(errs...)
}

// prevHostVeth is the host interface prevResult names, or "".
func (at *attach) prevHostVeth() string {
	prev, err := at.conf.PrevResult()
	if err != nil || prev == nil || len(prev.Interfaces) <= ifHost {
		return ""
	}
	if iface := prev.Interfaces[ifHost]; iface.Sandbox == "" {
		return iface.Name
	}
	return ""
}

// removeRules removes this attachment's masquerade and spoof-check rules,
// whatever backend (ours or the reference plugin's) made them.
func (at *attach) removeRules(ctx context.Context) error {
	c := at.conf
	if !(c.IPMasq && c.HasIPAM()) && !c.MacSpoofChk && !c.MayHaveIsolated() {
		return nil
	}
	fw, err := at.rules(ctx)
	if err != nil {
		return err
	}
	return fw.Remove(ctx, at.owner())
}
