package bridgeconf

import (
	"cnisuite/pkg/firewall"
)

// validateIsolation decodes icc, isolate and ingressFilter into noICC,
// isolateMode and filterIngress (firewall.ParseIsolation).
func (c *NetConf) validateIsolation() error {
	var iso firewall.Isolation
	err := firewall.ParseIsolation(firewall.IsolationKeys{ICC: c.ICC, Isolate: c.Isolate, IngressFilter: c.IngressFilter}, &iso)
	c.noICC, c.isolateMode, c.filterIngress = iso.NoICC, iso.Isolate, iso.FilterIngress
	return err
}

// Isolates reports whether the configuration asks for isolation rules.
func (c *NetConf) Isolates() bool { return c.noICC || c.isolateMode != "" || c.filterIngress }

// MayHaveIsolated reports, for DEL and GC, which read the configuration
// without validating it, whether an ADD may have written isolation rules.
func (c *NetConf) MayHaveIsolated() bool {
	return len(c.ICC) > 0 || len(c.Isolate) > 0 || len(c.IngressFilter) > 0
}

// L3Iface is the host interface the network's traffic is routed through:
// the bridge, or its VLAN gateway interface.
func (c *NetConf) L3Iface() string {
	if c.Vlan > 0 && c.IsGW && c.HasIPAM() {
		return c.VlanGatewayName()
	}
	return c.BrName
}

// Isolation returns the isolation the configuration asks for, on the
// network's layer-3 interface; the attachment adds its host interface,
// addresses and, for strict isolation, the node's uplinks.
func (c *NetConf) Isolation() firewall.Isolation {
	return firewall.Isolation{Bridge: c.L3Iface(), NoICC: c.noICC, Isolate: c.isolateMode, FilterIngress: c.filterIngress}
}
