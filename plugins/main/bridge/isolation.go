package main

import (
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/types"
	"cnisuite/pkg/uplink"
)

// desiredIsolation returns the isolation of the attachment, from the result
// being built (ADD) or the prevResult (CHECK).
func (at *attach) desiredIsolation() (*firewall.Isolation, error) {
	if len(at.res.Interfaces) <= ifHost {
		return nil, types.Errorf(types.ErrInvalidConfig, "icc/isolate: result lists no host interface")
	}
	iso := at.conf.Isolation()
	iso.HostIface = at.res.Interfaces[ifHost].Name
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
	return &iso, nil
}
