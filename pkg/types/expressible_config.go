package types

import (
	"encoding/json"
	"net"

	"cnisuite/pkg/version"
)

// ConfigExpressible refuses, before anything is created, a configuration
// whose result a cniVersion of 0.1.0/0.2.0 cannot hold: no address at all
// (no IPAM plugin: layer 2 only) or more than one address of a family
// (several IPAM range sets of a family in rawIPAM). An unsupported version
// passes: it is the skel's to report.
func ConfigExpressible(cniVersion string, hasIPAM bool, rawIPAM json.RawMessage) error {
	fam, err := version.FamilyOf(cniVersion)
	if err != nil || fam != version.Family020 {
		return nil
	}
	if !hasIPAM {
		return Errorf(ErrIncompatibleVersion,
			"ipam: layer 2 mode (no ipam.type) gives no IP address, which a cniVersion %s result cannot express; use 0.3.0 or newer", cniVersion)
	}
	counts := ipamFamilies(rawIPAM)
	for _, f := range []int{4, 6} {
		if counts[f] > 1 {
			return Errorf(ErrIncompatibleVersion,
				"ipam: %d IPv%d ranges give %d addresses, which a cniVersion %s result cannot express; use 0.3.0 or newer",
				counts[f], f, counts[f], cniVersion)
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
