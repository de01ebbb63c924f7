package main

import (
	"context"
	"errors"
	"io"
	"os"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// The attachment's record (pkg/records) and its repair (pkg/resync): ADD
// records its input, prevResult and runtimeConfig included; cnisuite
// resync runs repair, and STATUS runs it as a dry run on one attachment
// of the network (resync.Status).

// writeRecord records what a repair of the attachment needs.
func (p *plugin) writeRecord(c *Config, a *skel.CmdArgs) error {
	exe, _ := os.Executable() // without it, cnisuite resync -bindir finds the plugin
	err := p.records.Write(records.Record{
		Plugin: firewall.PluginPortmap, Network: c.Name, ContainerID: a.ContainerID, IfName: a.IfName,
		Netns: a.Netns, Args: a.Args, Config: a.StdinData, Binary: exe,
	})
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	return nil
}

// removeRecord deletes the attachment's record (DEL).
func (p *plugin) removeRecord(c *Config, a *skel.CmdArgs) error {
	return p.records.Remove(firewall.PluginPortmap, c.Name, a.ContainerID, a.IfName)
}

// repair puts back the attachment's port mappings and route_localnet when
// they are gone (unless dryRun) and says what was gone. The mappings are
// built by portMaps and the sysctl set by enableLocalnet, as in ADD; the
// backend's Ensure runs only when its Check finds a rule missing.
func (p *plugin) repair(ctx context.Context, r records.Record, dryRun bool) ([]string, error) {
	a := &skel.CmdArgs{ContainerID: r.ContainerID, IfName: r.IfName, Netns: r.Netns, Args: r.Args, StdinData: r.Config, Stderr: io.Discard}
	c, err := Load(a.StdinData)
	if err != nil {
		return nil, err
	}
	prev, err := c.RequirePrevResult("portmap", "ADD")
	if err != nil {
		return nil, err
	}
	v4, v6 := containerAddrs(prev, a.IfName)
	if len(c.RuntimeConfig.PortMaps) == 0 || v4 == nil && v6 == nil {
		return nil, nil
	}
	be, err := p.backend(ctx, c)
	if err != nil {
		return nil, err
	}
	pm := c.portMaps(v4, v6)
	var missing []string
	if err := be.Check(ctx, owner(c, a), firewall.Rules{PortMaps: pm}); err != nil {
		if !errors.Is(err, firewall.ErrMissing) {
			return nil, err
		}
		missing = append(missing, "port mappings")
		if !dryRun {
			if err := be.Ensure(ctx, owner(c, a), firewall.Rules{PortMaps: pm}); err != nil {
				return missing, err
			}
		}
	}
	if v4 == nil || !pm.SNAT || pm.MasqAll || p.host.LocalnetOn(v4.IP) {
		return missing, nil
	}
	missing = append(missing, "route_localnet")
	if dryRun {
		return missing, nil
	}
	return missing, p.enableLocalnet(a, v4.IP)
}
