package main

import (
	"cnisuite/pkg/macaddr"
	"cnisuite/pkg/types"
)

// pickMAC chooses the container MAC: CNI_ARGS MAC < args.cni.mac <
// runtimeConfig.mac (the mac capability), as the reference plugin does.
func (c *NetConf) pickMAC(cniArgs string) error {
	args, err := types.ParseArgs(cniArgs)
	if err != nil {
		return err
	}
	c.mac, err = macaddr.Choose(macaddr.Source{Field: "CNI_ARGS MAC", Value: args["MAC"]},
		macaddr.Source{Field: "args.cni.mac", Value: c.Args.Cni.Mac},
		macaddr.Source{Field: "runtimeConfig.mac", Value: c.RuntimeConfig.Mac})
	return err
}

// validateExpressible refuses what a result at cniVersion 0.1.0/0.2.0
// cannot hold (pkg/types).
func (c *NetConf) validateExpressible() error {
	return types.ConfigExpressible(c.CNIVersion, c.hasIPAM(), c.rawIPAM)
}
