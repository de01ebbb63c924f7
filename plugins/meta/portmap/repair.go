package main

import (
	"context"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
)

// The attachment's record (pkg/records) and its repair (pkg/resync): ADD
// records its input, prevResult and runtimeConfig included; cnisuite
// resync runs repair, and STATUS runs it as a dry run on one attachment
// of the network (resync.Status).

// writeRecord records what a repair of the attachment needs.
func (p *plugin) writeRecord(c *Config, a *skel.CmdArgs) error {
	return p.records.WriteCall(firewall.PluginPortmap, c.Name, a, nil)
}

// removeRecord deletes the attachment's record (DEL).
func (p *plugin) removeRecord(c *Config, a *skel.CmdArgs) error {
	return p.records.Remove(firewall.PluginPortmap, c.Name, a.ContainerID, a.IfName)
}

// repair puts back the attachment's port mappings and route_localnet when
// they are gone (unless dryRun) and says what was gone. The mappings are
// built by portMaps and the sysctl set by enableLocalnet, as in ADD.
func (p *plugin) repair(ctx context.Context, r records.Record, dryRun bool) ([]string, error) {
	a := r.CmdArgs()
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
	pm := c.portMaps(v4, v6)
	backend := func(ctx context.Context) (firewall.Backend, error) { return p.backend(ctx, c) }
	localnet := resync.Part{
		Check: func(context.Context) ([]string, error) {
			if v4 == nil || !pm.SNAT || pm.MasqAll || p.host.LocalnetOn(v4.IP) {
				return nil, nil
			}
			return []string{"route_localnet"}, nil
		},
		Put: func(context.Context) error { return p.enableLocalnet(c, a, v4.IP) },
	}
	return resync.Repair(ctx, dryRun, resync.Rules("port mappings", backend, owner(c, a), firewall.Rules{PortMaps: pm}), localnet)
}
