package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"cnisuite/pkg/types"
)

// nodeOptions are the keys users of netavark's and Docker's bridge
// networks expect (docs/coming-from-netavark-or-docker.md). Every one is
// off by default, so that a configuration written for the reference plugin
// behaves as it did.
type nodeOptions struct {
	// MTUFromUplink takes the MTU of the node's default route interface
	// (the lowest of the two families; in the bridge's VRF table when it
	// is in one) when mtu is not set.
	MTUFromUplink bool `json:"mtuFromUplink,omitempty"`
	// DefaultRouteMetric is the metric of the default routes
	// isDefaultGateway adds; DefaultRouteMetricIPv6 overrides it for IPv6.
	DefaultRouteMetric     *int `json:"defaultRouteMetric,omitempty"`
	DefaultRouteMetricIPv6 *int `json:"defaultRouteMetricIPv6,omitempty"`
	// HostVethPrefix starts the host-side veth names instead of "veth".
	HostVethPrefix string `json:"hostVethPrefix,omitempty"`
	// RemoveEmptyBridge deletes the bridge when its last port leaves.
	RemoveEmptyBridge bool `json:"removeEmptyBridge,omitempty"`
}

// maxVethPrefix leaves eight hex digits of a hash in a 15-byte name: 2^32
// names, so that a node's thousand attachments practically never clash.
const maxVethPrefix = 7

// maxMetric is the largest route priority the kernel takes.
const maxMetric = 1<<32 - 1

func (o nodeOptions) validate() error {
	var errs []error
	for key, m := range map[string]*int{"defaultRouteMetric": o.DefaultRouteMetric, "defaultRouteMetricIPv6": o.DefaultRouteMetricIPv6} {
		if m != nil && (*m < 0 || *m > maxMetric) {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s %d: must be 0-%d", key, *m, maxMetric))
		}
	}
	if p := o.HostVethPrefix; p != "" {
		if len(p) > maxVethPrefix {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "hostVethPrefix %q: at most %d bytes, so that eight hex digits follow", p, maxVethPrefix))
		} else if err := types.ValidateLinkName("hostVethPrefix", p+"00000000"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// metric is the metric of the default route of a family (4 or 6), 0 for
// the kernel's default.
func (o nodeOptions) metric(family int) int {
	if family == 6 && o.DefaultRouteMetricIPv6 != nil {
		return *o.DefaultRouteMetricIPv6
	}
	if o.DefaultRouteMetric != nil {
		return *o.DefaultRouteMetric
	}
	return 0
}

// hostVethName is the host-side name of the attachment's veth: the name
// args.cni.hostVethName asks for, or the prefix and eight hex digits of a
// hash of the attachment, so that DEL finds it again by name alone.
func (c *NetConf) hostVethName(containerID, ifname string) (name string, exact bool) {
	if n := c.Args.Cni.HostVethName; n != "" {
		return n, true
	}
	prefix := c.HostVethPrefix
	if prefix == "" {
		prefix = "veth"
	}
	sum := sha256.Sum256([]byte(c.Name + "\x00" + containerID + "\x00" + ifname))
	return prefix + hex.EncodeToString(sum[:4]), false
}
