package bridgeconf

import (
	"bytes"
	"encoding/json"
	"errors"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/types"
)

// validateIsolation decodes icc (a boolean), isolate (false, true or
// "strict") and ingressFilter (a boolean) into noICC, isolateMode and
// filterIngress. They are decoded by hand so that a wrong type is an
// invalid configuration (code 7) reported with every other problem, not a
// decoding failure; an absent key leaves its default (ICC on, no
// isolation, no ingress filter).
func (c *NetConf) validateIsolation() error {
	c.noICC, c.isolateMode, c.filterIngress = false, "", false
	var errs []error
	if len(c.ICC) > 0 {
		on, err := decodeBool("icc", c.ICC)
		errs = append(errs, err)
		c.noICC = !on
	}
	if len(c.IngressFilter) > 0 {
		on, err := decodeBool("ingressFilter", c.IngressFilter)
		errs = append(errs, err)
		c.filterIngress = on
	}
	switch string(c.Isolate) {
	case "", "false":
	case "true":
		c.isolateMode = firewall.IsolateOn
	case `"strict"`:
		c.isolateMode = firewall.IsolateStrict
	default:
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, `isolate %s: must be false, true or "strict"`, c.Isolate))
	}
	return errors.Join(errs...)
}

// decodeBool decodes the value of key, true or false (null refused).
func decodeBool(key string, raw json.RawMessage) (bool, error) {
	var on bool
	if bytes.Equal(raw, []byte("null")) || json.Unmarshal(raw, &on) != nil {
		return false, types.Errorf(types.ErrInvalidConfig, "%s %s: must be true or false", key, raw)
	}
	return on, nil
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
