package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/invoke"
	"cnisuite/pkg/link"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// cmdDel removes everything the attachment's ADD made: the veth pair, the
// IPAM lease, the masquerade and spoof-check rules. Absence of any of them —
// of the netns, the interface, the prevResult — is success; so is a second
// DEL. Real failures are joined and returned.
func (p *plugin) cmdDel(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := loadDelConf(a.StdinData, a.Stderr)
	if err != nil {
		return err
	}
	// Started before anything else, so that its start-up overlaps ours.
	h := startDelHelper(a.Netns)
	defer h.release()
	at, err := p.open(conf, a, false)
	if err != nil {
		return err
	}
	defer at.close()
	at.del = h
	// The three removals are independent, and run at the same time: deleting
	// a veth returns only after the kernel's RCU barrier (10-25 ms here,
	// whatever else happens), time in which the lease and the rules go.
	ipam := func() error {
		if !conf.hasIPAM() {
			return nil
		}
		defer at.tm.step("ipam")()
		if err := invoke.DelegateDel(ctx, a, conf.IPAM.Type, a.StdinData); err != nil {
			return fmt.Errorf("ipam %q: %w", conf.IPAM.Type, err)
		}
		return nil
	}
	rules := func() error {
		defer at.tm.step("removeRules")()
		return at.removeRules(ctx)
	}
	return errors.Join(concurrently(at.removeVeth, ipam, rules)...)
}

// loadDelConf reads the configuration for DEL: CNI_ARGS are not needed and
// their errors do not stop the cleanup; nor does a bad MAC or VLAN setting.
func loadDelConf(data []byte, stderr io.Writer) (*NetConf, error) {
	conf := &NetConf{BrName: defaultBridge}
	if err := types.Decode(data, conf); err != nil {
		return nil, err
	}
	if err := types.ValidateLinkName("bridge", conf.BrName); err != nil {
		return nil, err
	}
	if err := validateIPAMType(conf.IPAM.Type); err != nil {
		return nil, err
	}
	if conf.CNIVersion == "" {
		conf.CNIVersion = "0.1.0"
	}
	return conf, nil
}

// removeVeth deletes the container interface inside the netns (which takes
// its host peer along) and then the host end wherever it is still found: by
// the prevResult's name or by the stable name ADD prefers. A host link is
// only deleted when it is a veth port of the configured bridge.
func (at *attach) removeVeth() error {
	defer at.tm.step("removeVeth")()
	a := at.args
	if at.netns != nil {
		if err := at.deleteContainerEnd(); err != nil {
			return fmt.Errorf("deleting %q in %q: %w", a.IfName, a.Netns, err)
		}
	}
	var errs []error
	for _, name := range at.hostVethCandidates() {
		errs = append(errs, at.deleteHostPort(name))
	}
	return errors.Join(errs...)
}

// deleteContainerEnd deletes the container interface: a veth pair without
// waiting for the kernel's cleanup (see vethdel.go), anything else at once.
func (at *attach) deleteContainerEnd() error {
	l, err := at.cont.LinkByName(at.args.IfName)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up %q: %w", at.args.IfName, err)
	}
	if veth, ok := l.(*netlink.Veth); ok {
		if done, err := at.deleteVethDetached(veth); done {
			return err
		}
	}
	return link.DeleteLink(at.cont, at.args.IfName)
}

func (at *attach) hostVethCandidates() []string {
	names := []string{hostVethName(at.conf.Name, at.args.ContainerID, at.args.IfName)}
	prev, err := at.conf.PrevResult()
	if err != nil || prev == nil {
		return names
	}
	if len(prev.Interfaces) > ifHost {
		if iface := prev.Interfaces[ifHost]; iface.Sandbox == "" && iface.Name != names[0] {
			names = append(names, iface.Name)
		}
	}
	return names
}

func (at *attach) deleteHostPort(name string) error {
	l, err := at.host.LinkByName(name)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up host veth %q: %w", name, err)
	}
	if _, ok := l.(*netlink.Veth); !ok || l.Attrs().MasterIndex == 0 {
		return nil
	}
	br, err := at.host.LinkByIndex(l.Attrs().MasterIndex)
	if err != nil || br.Attrs().Name != at.conf.BrName {
		return nil // not a port of our bridge: not ours to delete
	}
	return link.DeleteLink(at.host, name)
}

// removeRules removes this attachment's masquerade and spoof-check rules,
// whatever backend (ours or the reference plugin's) made them.
func (at *attach) removeRules(ctx context.Context) error {
	c := at.conf
	if !(c.IPMasq && c.hasIPAM()) && !c.MacSpoofChk && !c.mayHaveIsolated() {
		return nil
	}
	fw, err := at.rules(ctx)
	if err != nil {
		return err
	}
	return fw.Remove(ctx, at.owner())
}
