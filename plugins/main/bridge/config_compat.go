package main

import (
	"encoding/json"
	"net"

	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
)

// pickMAC chooses the container MAC: CNI_ARGS MAC < args.cni.mac <
// runtimeConfig.mac (the mac capability), as the reference plugin does.
func (c *NetConf) pickMAC(cniArgs string) error {
	args, err := types.ParseArgs(cniArgs)
	if err != nil {
		return err
	}
	sources := []struct{ field, value string }{
		{"CNI_ARGS MAC", args["MAC"]},
		{"args.cni.mac", c.Args.Cni.Mac},
		{"runtimeConfig.mac", c.RuntimeConfig.Mac},
	}
	for _, s := range sources {
		if s.value == "" {
			continue
		}
		mac, err := parseUnicastMAC(s.field, s.value)
		if err != nil {
			return err
		}
		c.mac = mac
	}
	return nil
}

func parseUnicastMAC(field, value string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(value)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: %w", field, value, err)
	}
	if len(mac) != 6 {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: not a 6-byte Ethernet address", field, value)
	}
	if mac[0]&1 == 1 {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: a multicast address cannot be an interface address", field, value)
	}
	return mac, nil
}

// validateExpressible refuses, before anything is created, what a result at
// cniVersion 0.1.0/0.2.0 cannot hold: no address at all (layer 2 mode) or
// more than one address of a family (several IPAM range sets of a family).
func (c *NetConf) validateExpressible() error {
	fam, err := version.FamilyOf(c.CNIVersion)
	if err != nil || fam != version.Family020 {
		return nil // an unsupported version is the skel's to report
	}
	if !c.hasIPAM() {
		return types.Errorf(types.ErrIncompatibleVersion,
			"ipam: layer 2 mode (no ipam.type) gives no IP address, which a cniVersion %s result cannot express; use 0.3.0 or newer", c.CNIVersion)
	}
	counts := ipamFamilies(c.rawIPAM)
	for _, f := range []int{4, 6} {
		if counts[f] > 1 {
			return types.Errorf(types.ErrIncompatibleVersion,
				"ipam: %d IPv%d ranges give %d addresses, which a cniVersion %s result cannot express; use 0.3.0 or newer",
				counts[f], f, counts[f], c.CNIVersion)
		}
	}
	return nil
}

// ipamFamilies counts the address families of the range sets of a
// host-local style ipam object (ranges, or the old single subnet). Unknown
// shapes count nothing: the IPAM result is checked again after IPAM ADD.
func ipamFamilies(raw json.RawMessage) map[int]int {
	var ipam struct {
		Subnet string `json:"subnet"`
		Ranges [][]struct {
			Subnet string `json:"subnet"`
		} `json:"ranges"`
	}
	counts := map[int]int{}
	if len(raw) == 0 || json.Unmarshal(raw, &ipam) != nil {
		return counts
	}
	count := func(subnet string) {
		if ip, _, err := net.ParseCIDR(subnet); err == nil {
			if ip.To4() != nil {
				counts[4]++
			} else {
				counts[6]++
			}
		}
	}
	count(ipam.Subnet)
	for _, set := range ipam.Ranges {
		if len(set) > 0 {
			count(set[0].Subnet)
		}
	}
	return counts
}
