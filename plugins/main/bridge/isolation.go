package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/link"
	"cnisuite/pkg/types"
)

// The keys icc, isolate and ingressFilter: decoded by hand, so that a
// wrong type is an invalid configuration (code 7) reported with every
// other problem, not a decoding failure.

// validateIsolation decodes icc, isolate and ingressFilter into noICC,
// isolateMode and filterIngress.
func (c *NetConf) validateIsolation() error {
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
		up, err := uplinks(at.host)
		if err != nil {
			return nil, err
		}
		iso.Uplinks = up
	}
	return iso, nil
}

// uplinks returns the names of the interfaces of the node's default
// routes, both families, sorted.
// Equivalent to: ip route show default; ip -6 route show default
func uplinks(h *netlink.Handle) ([]string, error) {
	seen := map[int]bool{}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := link.RouteListFiltered(h, family, &netlink.Route{Table: 254}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range routes {
			if r.Dst != nil {
				if ones, _ := r.Dst.Mask.Size(); ones != 0 {
					continue
				}
			}
			seen[r.LinkIndex] = true
			for _, nh := range r.MultiPath {
				seen[nh.LinkIndex] = true
			}
		}
	}
	var out []string
	for index := range seen {
		if index == 0 {
			continue
		}
		l, err := h.LinkByIndex(index)
		if err != nil {
			return nil, fmt.Errorf("reading uplink %d: %w", index, err)
		}
		out = append(out, l.Attrs().Name)
	}
	sort.Strings(out)
	return out, nil
}
