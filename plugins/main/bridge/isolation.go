package main

import (
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/types"
	"cnisuite/pkg/uplink"
)

// validateIsolation decodes icc, isolate and ingressFilter into noICC,
// isolateMode and filterIngress (firewall.ParseIsolation).
func (c *NetConf) validateIsolation() error {
	var iso firewall.Isolation
	err := firewall.ParseIsolation(firewall.IsolationKeys{ICC: c.ICC, Isolate: c.Isolate, IngressFilter: c.IngressFilter}, &iso)
	c.noICC, c.isolateMode, c.filterIngress = iso.NoICC, iso.Isolate, iso.FilterIngress
	return err
}

// isolates reports whether the configuration asks for isolation rules.
func (c *NetConf) isolates() bool { return c.noICC || c.isolateMode != "" || c.filterIngress }

// mayHaveIsolated reports, for DEL and GC, which read the configuration
// without validating it, whether an ADD may have written isolation rules.
func (c *NetConf) mayHaveIsolated() bool {
	return len(c.ICC) > 0 || len(c.Isolate) > 0 || len(c.IngressFilter) > 0
}

// l3Iface is the host interface the network's traffic is routed through:
// the bridge, or its VLAN gateway interface.
func (c *NetConf) l3Iface() string {
	if c.Vlan > 0 && c.IsGW && c.hasIPAM() {
		return c.VlanGatewayName()
	}
	return c.BrName
}

// desiredIsolation returns the isolation of the attachment, from the result
// being built (ADD) or the prevResult (CHECK).
func (at *attach) desiredIsolation() (*firewall.Isolation, error) {
	if len(at.res.Interfaces) <= ifHost {
		return nil, types.Errorf(types.ErrInvalidConfig, "icc/isolate: result lists no host interface")
	}
	iso := &firewall.Isolation{
		Bridge:        at.conf.l3Iface(),
		HostIface:     at.res.Interfaces[ifHost].Name,
		NoICC:         at.conf.noICC,
		Isolate:       at.conf.isolateMode,
		FilterIngress: at.conf.filterIngress,
	}
	for _, ip := range at.res.IPs {
		iso.IPs = append(iso.IPs, ip.Address.IP)
	}
	if iso.Isolate == firewall.IsolateStrict {
		up, err := uplink.DefaultRouteLinkNames(at.host)
		if err != nil {
			return nil, err
		}
		iso.Uplinks = up
	}
	return iso, nil
}
