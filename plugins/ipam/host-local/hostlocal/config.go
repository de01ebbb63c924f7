package hostlocal

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/rootless"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
	"cnisuite/plugins/ipam/host-local/allocator"
)

// defaultDataDir is where leases live unless ipam.dataDir says otherwise.
const defaultDataDir = "/var/lib/cni/networks"

// netConf is the configuration host-local reads from stdin: the whole
// network configuration of the plugin that delegates to it.
type netConf struct {
	types.NetConf
	IPAM          *ipamConf     `json:"ipam"`
	RuntimeConfig runtimeConfig `json:"runtimeConfig"`
	Args          struct {
		CNI struct {
			IPs *[]string `json:"ips"`
		} `json:"cni"`
	} `json:"args"`
}

// ipamConf is the "ipam" object.
type ipamConf struct {
	Type string `json:"type"`
	// rangeConf holds the deprecated single range at the top level of ipam.
	rangeConf
	Ranges     [][]rangeConf  `json:"ranges"`
	Routes     []*types.Route `json:"routes"`
	DataDir    string         `json:"dataDir"`
	ResolvConf string         `json:"resolvConf"`
}

// rangeConf is one range as written in the configuration.
type rangeConf struct {
	Subnet     string `json:"subnet,omitempty"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
}

// runtimeConfig holds the capability arguments host-local understands.
type runtimeConfig struct {
	IPs      []string      `json:"ips"`
	IPRanges [][]rangeConf `json:"ipRanges"`
}

// config is the validated configuration of one call.
type config struct {
	net        *netConf
	Name       string
	Sets       []allocator.RangeSet
	Routes     []*types.Route
	ResolvConf string
	Requested  []net.IP
}

// parseConf decodes stdin and applies the defaults that need no validation.
func parseConf(data []byte) (*netConf, error) {
	n, err := types.DecodeFresh[netConf](data, nil)
	if err != nil {
		return nil, err
	}
	if n.IPAM == nil {
		return nil, types.Errorf(types.ErrInvalidConfig, "IPAM config missing 'ipam' key")
	}
	if n.CNIVersion == "" {
		n.CNIVersion = "0.1.0"
	}
	return n, nil
}

// dataDir is ipam.dataDir, or its default in the call's environment env:
// /var/lib/cni/networks, the reference's, with the node's root and for a
// rootless runtime that made it writable; $XDG_RUNTIME_DIR/cni/networks
// for one that did not (pkg/rootless).
func (n *netConf) dataDir(env []string) string {
	if n.IPAM.DataDir != "" {
		return n.IPAM.DataDir
	}
	return rootless.StateDir(defaultDataDir, "networks", env)
}

// loadConfig reads and validates the whole configuration of an ADD or
// CHECK, with the requested addresses of CNI_ARGS (cniArgs).
func loadConfig(data []byte, cniArgs string) (*config, error) {
	n, err := parseConf(data)
	if err != nil {
		return nil, err
	}
	sets, err := n.rangeSets()
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, types.Errorf(types.ErrInvalidConfig, "ipam: no IP ranges specified (set ipam.ranges)")
	}
	if err := checkRoutes(n.IPAM.Routes); err != nil {
		return nil, err
	}
	requested, err := n.requested(cniArgs)
	if err != nil {
		return nil, err
	}
	return &config{net: n, Name: n.Name, Sets: sets, Routes: n.IPAM.Routes,
		ResolvConf: n.IPAM.ResolvConf, Requested: requested}, nil
}

// rangeSets gathers the range sets in the reference's order, which fixes
// the index n of last_reserved_ip.n: runtimeConfig.ipRanges, then the
// deprecated top-level range, then ipam.ranges. It validates every set,
// that no two sets overlap, and the number of sets per family.
func (n *netConf) rangeSets() ([]allocator.RangeSet, error) {
	var raw [][]rangeConf
	var fields []string
	for i, s := range n.RuntimeConfig.IPRanges {
		raw, fields = append(raw, s), append(fields, fmt.Sprintf("runtimeConfig.ipRanges[%d]", i))
	}
	if n.IPAM.rangeConf != (rangeConf{}) {
		raw, fields = append(raw, []rangeConf{n.IPAM.rangeConf}), append(fields, "ipam")
	}
	for i, s := range n.IPAM.Ranges {
		raw, fields = append(raw, s), append(fields, fmt.Sprintf("ipam.ranges[%d]", i))
	}
	sets := make([]allocator.RangeSet, len(raw))
	for i := range raw {
		set, err := parseSet(raw[i], fields[i])
		if err != nil {
			return nil, err
		}
		for j := 0; j < i; j++ {
			if set.Overlaps(sets[j]) {
				return nil, types.Errorf(types.ErrInvalidConfig, "%s (%s) overlaps with %s (%s)", fields[i], set, fields[j], sets[j])
			}
		}
		sets[i] = set
	}
	return sets, checkFamilies(n.CNIVersion, sets)
}

// parseSet parses and validates one range set. The deprecated top-level
// range is named by field "ipam" alone.
func parseSet(raw []rangeConf, field string) (allocator.RangeSet, error) {
	set := make(allocator.RangeSet, len(raw))
	for i, rc := range raw {
		f := fmt.Sprintf("%s[%d]", field, i)
		if field == "ipam" {
			f = field
		}
		r, err := parseRange(rc, f)
		if err != nil {
			return nil, err
		}
		set[i] = r
	}
	if len(set) > 0 && field == "ipam" {
		return set, set[0].Canonicalize(field)
	}
	return set, set.Canonicalize(field)
}

// parseRange turns the strings of one range into addresses; Canonicalize
// validates them.
func parseRange(rc rangeConf, field string) (allocator.Range, error) {
	var r allocator.Range
	if rc.Subnet == "" {
		return r, types.Errorf(types.ErrInvalidConfig, "%s.subnet: missing", field)
	}
	ip, n, err := net.ParseCIDR(rc.Subnet)
	if err != nil {
		return r, types.Errorf(types.ErrInvalidConfig, "%s.subnet %q: not a CIDR", field, rc.Subnet)
	}
	r.Subnet = net.IPNet{IP: ip, Mask: n.Mask}
	for _, f := range []struct {
		name, value string
		dst         *net.IP
	}{{"rangeStart", rc.RangeStart, &r.RangeStart}, {"rangeEnd", rc.RangeEnd, &r.RangeEnd}, {"gateway", rc.Gateway, &r.Gateway}} {
		if f.value == "" {
			continue
		}
		if *f.dst = net.ParseIP(f.value); *f.dst == nil {
			return r, types.Errorf(types.ErrInvalidConfig, "%s.%s %q: not an IP address", field, f.name, f.value)
		}
	}
	return r, nil
}

// checkFamilies refuses, before 0.3.0, a second address of one family: the
// result of those versions holds one ip4 and one ip6.
func checkFamilies(cniVersion string, sets []allocator.RangeSet) error {
	if version.AtLeast(cniVersion, "0.3.0") {
		return nil
	}
	count := map[int]int{}
	for _, s := range sets {
		if count[s.Family()]++; count[s.Family()] > 1 {
			return types.Errorf(types.ErrInvalidConfig,
				"cniVersion %s does not support more than one address per family, and the ranges give %d IPv%d range sets; use cniVersion 0.3.0 or newer",
				cniVersion, count[s.Family()], s.Family())
		}
	}
	return nil
}

// checkRoutes refuses routes that would make an invalid result: they are
// copied into it, where the result schema wants a dst, an mtu of 68-65535
// and an advmss of at least 1, and the spec 1.1 fields are unsigned (0 is
// "not set" for mtu, advmss and priority, which are omitted then).
func checkRoutes(routes []*types.Route) error {
	var errs []error
	invalid := func(format string, a ...any) {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, format, a...))
	}
	for i, r := range routes {
		if r == nil || r.Dst.IP == nil {
			invalid("ipam.routes[%d].dst: missing", i)
			continue
		}
		if r.MTU != 0 && (r.MTU < 68 || r.MTU > 65535) {
			invalid("ipam.routes[%d].mtu %d: must be 68-65535", i, r.MTU)
		}
		if r.AdvMSS < 0 {
			invalid("ipam.routes[%d].advmss %d: must not be negative", i, r.AdvMSS)
		}
		if r.Priority < 0 {
			invalid("ipam.routes[%d].priority %d: must not be negative", i, r.Priority)
		}
		if r.Table != nil && *r.Table < 0 {
			invalid("ipam.routes[%d].table %d: must not be negative", i, *r.Table)
		}
		if r.Scope != nil && (*r.Scope < 0 || *r.Scope > 255) {
			invalid("ipam.routes[%d].scope %d: must be 0-255", i, *r.Scope)
		}
	}
	return errors.Join(errs...)
}

// requested gathers the addresses asked for: args.cni.ips, runtimeConfig.ips
// (capability "ips") and CNI_ARGS IP, which the conventions say to ignore
// when args.cni.ips is present. Duplicates count once; a prefix is ignored.
func (n *netConf) requested(cniArgs string) ([]net.IP, error) {
	var out []net.IP
	seen := map[string]bool{}
	add := func(field, s string, kind error) error {
		ip := net.ParseIP(strings.TrimSpace(strings.SplitN(s, "/", 2)[0]))
		if ip == nil {
			return types.Errorf(kind, "%s %q: not an IP address", field, s)
		}
		if !seen[ip.String()] {
			seen[ip.String()] = true
			out = append(out, ip)
		}
		return nil
	}
	if n.Args.CNI.IPs != nil {
		for i, s := range *n.Args.CNI.IPs {
			if err := add(fmt.Sprintf("args.cni.ips[%d]", i), s, types.ErrInvalidConfig); err != nil {
				return nil, err
			}
		}
	}
	for i, s := range n.RuntimeConfig.IPs {
		if err := add(fmt.Sprintf("runtimeConfig.ips[%d]", i), s, types.ErrInvalidConfig); err != nil {
			return nil, err
		}
	}
	args, err := types.ParseArgs(cniArgs)
	if err != nil {
		return nil, err
	}
	if ip, ok := args["IP"]; ok && ip != "" && n.Args.CNI.IPs == nil {
		if err := add("CNI_ARGS IP", ip, types.ErrInvalidEnv); err != nil {
			return nil, err
		}
	}
	return out, nil
}
