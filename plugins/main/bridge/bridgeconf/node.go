package bridgeconf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"

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
	// IPMasqSourceIPv4/IPv6 make ipMasq SNAT to this address instead of
	// masquerading to the outgoing interface's.
	IPMasqSourceIPv4 string `json:"ipMasqSourceIPv4,omitempty"`
	IPMasqSourceIPv6 string `json:"ipMasqSourceIPv6,omitempty"`
}

// maxVethPrefix leaves eight hex digits of a hash in a 15-byte name: 2^32
// names, so that a node's thousand attachments practically never clash.
const maxVethPrefix = 7

// maxMetric is the largest route priority the kernel takes.
const maxMetric int64 = 1<<32 - 1

func (o nodeOptions) validate() error {
	var errs []error
	for key, m := range map[string]*int{"defaultRouteMetric": o.DefaultRouteMetric, "defaultRouteMetricIPv6": o.DefaultRouteMetricIPv6} {
		// int64: on 32-bit targets an int cannot hold the maximum.
		if m != nil && (*m < 0 || int64(*m) > maxMetric) {
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
	for key, v := range map[string]struct {
		text string
		v4   bool
	}{"ipMasqSourceIPv4": {o.IPMasqSourceIPv4, true}, "ipMasqSourceIPv6": {o.IPMasqSourceIPv6, false}} {
		if v.text == "" {
			continue
		}
		ip := net.ParseIP(v.text)
		if ip == nil || (ip.To4() != nil) != v.v4 || !ip.IsGlobalUnicast() {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s %q: not a unicast address of that family", key, v.text))
		}
	}
	return errors.Join(errs...)
}

// MasqSource is the address ipMasq uses for the family of ip (SNAT), nil
// to masquerade.
func (o nodeOptions) MasqSource(ip net.IP) net.IP {
	if ip.To4() != nil {
		return net.ParseIP(o.IPMasqSourceIPv4)
	}
	return net.ParseIP(o.IPMasqSourceIPv6)
}

// Metric is the metric of the default route of a family (4 or 6), 0 for
// the kernel's default.
func (o nodeOptions) Metric(family int) int {
	if family == 6 && o.DefaultRouteMetricIPv6 != nil {
		return *o.DefaultRouteMetricIPv6
	}
	if o.DefaultRouteMetric != nil {
		return *o.DefaultRouteMetric
	}
	return 0
}

// HostVethName is the host-side name of the attachment's veth: the name
// args.cni.hostVethName asks for, or the prefix and eight hex digits of a
// hash of the attachment, so that DEL finds it again by name alone.
func (c *NetConf) HostVethName(containerID, ifname string) (name string, exact bool) {
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
