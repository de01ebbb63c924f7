package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/types"
)

// DefaultMarkMasqBit is the iptables mark bit of hairpin packets; 14 and 15
// are Kubernetes', 20–31 Calico's.
const DefaultMarkMasqBit = 13

// DefaultMaxHostPorts is how many host ports one attachment may map when
// the network configuration does not say (maxHostPorts): twice the largest
// ranges media servers publish (FreeSWITCH's RTP ports 16384-32768), and
// half of one protocol's ports, so that no attachment can take every port
// of the node.
const DefaultMaxHostPorts = 32768

// Config is the portmap configuration.
type Config struct {
	types.NetConf

	// SNAT masquerades hairpin and 127.0.0.1 traffic; default true.
	SNAT *bool `json:"snat,omitempty"`
	// MasqAll masquerades every source sent to a mapping.
	MasqAll bool `json:"masqAll,omitempty"`
	// MarkMasqBit is the iptables mark bit (0–31); default 13.
	MarkMasqBit *int `json:"markMasqBit,omitempty"`
	// ExternalSetMarkChain is an iptables chain that marks for masquerade.
	ExternalSetMarkChain *string `json:"externalSetMarkChain,omitempty"`
	// ConditionsV4/V6 are extra match tokens of the backend's syntax.
	ConditionsV4 *[]string `json:"conditionsV4,omitempty"`
	ConditionsV6 *[]string `json:"conditionsV6,omitempty"`
	// Backend is "iptables", "nftables" or unset (chosen from the options,
	// else automatically).
	Backend *string `json:"backend,omitempty"`
	// AllowPortRanges accepts mappings of more than one port (range);
	// default false. The operator's: runtimeConfig may come from pod
	// authors.
	AllowPortRanges bool `json:"allowPortRanges,omitempty"`
	// MaxHostPorts is how many host ports one attachment may map, each
	// port of a range counted; default DefaultMaxHostPorts.
	MaxHostPorts *int `json:"maxHostPorts,omitempty"`

	RuntimeConfig struct {
		PortMaps []PortMapEntry `json:"portMappings,omitempty"`
	} `json:"runtimeConfig,omitempty"`
}

// PortMapEntry is one element of the portMappings capability.
type PortMapEntry struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
	// Range, netavark's key, maps Range ports from HostPort, each to the
	// same container port; nil or 1: one port.
	Range *int `json:"range,omitempty"`
}

// mappingKeys are the keys of a port mapping: the four the portMappings
// capability convention names, and netavark's range.
var mappingKeys = []string{"hostPort", "containerPort", "protocol", "hostIP", "range"}

// UnknownMappingKeys names the keys of runtimeConfig.portMappings entries
// that the plugin does not know ("runtimeConfig.portMappings[1].range"), in
// order. Runtimes send only the four known ones: anything else is a typo or
// a feature (netavark's range) that this plugin would otherwise ignore
// without a word.
func UnknownMappingKeys(stdin []byte) []string {
	var raw struct {
		RuntimeConfig struct {
			PortMaps []map[string]json.RawMessage `json:"portMappings"`
		} `json:"runtimeConfig"`
	}
	if json.Unmarshal(stdin, &raw) != nil {
		return nil // Load reports what is wrong with it
	}
	var out []string
	for i, m := range raw.RuntimeConfig.PortMaps {
		var keys []string
		for k := range m {
			if !knownMappingKey(k) {
				keys = append(keys, k)
			}
		}
		out = append(out, mappingPaths(i, keys)...)
	}
	return out
}

// mappingPaths names the keys of the i-th mapping by their JSON path, in
// sorted order.
func mappingPaths(i int, keys []string) []string {
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("runtimeConfig.portMappings[%d].%s", i, k))
	}
	return out
}

// knownMappingKey reports whether encoding/json puts k into a field of
// PortMapEntry: it matches names without regard to case ("HostIP" is
// hostIP), so such a key is applied, not ignored, and no warning may say
// otherwise.
func knownMappingKey(k string) bool {
	for _, name := range mappingKeys {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// decode decodes the configuration.
func decode(stdin []byte) (*Config, error) {
	return types.DecodeFresh[Config](stdin, nil)
}

// Load decodes and validates a configuration.
func Load(stdin []byte) (*Config, error) {
	c, err := decode(stdin)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, format, a...))
	}
	if c.MarkMasqBit != nil && (*c.MarkMasqBit < 0 || *c.MarkMasqBit > 31) {
		bad("markMasqBit %d: must be between 0 and 31", *c.MarkMasqBit)
	}
	if c.MarkMasqBit != nil && c.ExternalSetMarkChain != nil {
		bad("markMasqBit and externalSetMarkChain: cannot specify both")
	}
	if c.ExternalSetMarkChain != nil && !validChainName(*c.ExternalSetMarkChain) {
		bad("externalSetMarkChain %q: not a valid iptables chain name", *c.ExternalSetMarkChain)
	}
	for name, conds := range map[string]*[]string{"conditionsV4": c.ConditionsV4, "conditionsV6": c.ConditionsV6} {
		if conds == nil {
			continue
		}
		for _, tok := range *conds {
			if strings.ContainsAny(tok, "\n\r;#") {
				bad("%s token %q: must not contain a newline, ';' or '#'", name, tok)
			}
		}
	}
	if _, err := c.backendKind(); err != nil {
		errs = append(errs, err)
	}
	for i, m := range c.RuntimeConfig.PortMaps {
		errs = append(errs, m.validate(i))
	}
	errs = append(errs, c.rangeOverlaps(), c.portLimits())
	return errors.Join(errs...)
}

// maxHostPorts returns the effective maxHostPorts.
func (c *Config) maxHostPorts() int {
	if c.MaxHostPorts == nil {
		return DefaultMaxHostPorts
	}
	return *c.MaxHostPorts
}

// portLimits holds the mappings to what the operator allows: ranges only
// with allowPortRanges, and at most maxHostPorts host ports in all.
func (c *Config) portLimits() error {
	var errs []error
	if c.MaxHostPorts != nil && *c.MaxHostPorts < 1 {
		return types.Errorf(types.ErrInvalidConfig, "maxHostPorts %d: must be at least 1", *c.MaxHostPorts)
	}
	total := 0
	for i, m := range c.RuntimeConfig.PortMaps {
		n := 1
		if m.Range != nil && *m.Range > 1 {
			n = *m.Range
			if !c.AllowPortRanges {
				errs = append(errs, types.Errorf(types.ErrInvalidConfig,
					"runtimeConfig.portMappings[%d].range %d: port ranges are not allowed on this network (allowPortRanges is not true in its configuration)", i, n))
			}
		}
		total += n
	}
	if limit := c.maxHostPorts(); total > limit {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig,
			"runtimeConfig.portMappings: %d host ports, past maxHostPorts %d (the network configuration's limit for one attachment)", total, limit))
	}
	return errors.Join(errs...)
}

// rangeOverlaps refuses a range that shares a host port with another
// mapping of the same protocol and host address: nftables holds each
// range as one interval element, which must not overlap another.
// (Identical single ports stay allowed, as before ranges.)
func (c *Config) rangeOverlaps() error {
	var errs []error
	ms := c.mappings()
	for i := range ms {
		for j := 0; j < i; j++ {
			a, b := ms[i], ms[j]
			if (a.IsRange() || b.IsRange()) && sameHosts(a, b) && a.Overlaps(b) {
				errs = append(errs, types.Errorf(types.ErrInvalidConfig,
					"runtimeConfig.portMappings[%d] (host ports %s/%s): overlaps runtimeConfig.portMappings[%d] (%s/%s)",
					i, a.HostPorts(), a.Protocol, j, b.HostPorts(), b.Protocol))
			}
		}
	}
	return errors.Join(errs...)
}

// sameHosts reports whether two mappings catch traffic to the same host
// addresses in some family: the same specific address, or both every
// address ("0.0.0.0", "::" or none) of a family both apply to.
func sameHosts(a, b firewall.PortMapping) bool {
	ha, hb := a.SpecificHost(), b.SpecificHost()
	if ha != nil || hb != nil {
		return ha.Equal(hb)
	}
	both := func(m firewall.PortMapping) bool { return m.HostIP == nil }
	v4 := func(m firewall.PortMapping) bool { return m.HostIP.To4() != nil }
	return both(a) || both(b) || v4(a) == v4(b)
}

func (m PortMapEntry) validate(i int) error {
	var errs []error
	field := fmt.Sprintf("runtimeConfig.portMappings[%d]", i)
	if m.HostPort < 1 || m.HostPort > 65535 {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s.hostPort %d: must be 1-65535", field, m.HostPort))
	}
	if m.ContainerPort < 1 || m.ContainerPort > 65535 {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s.containerPort %d: must be 1-65535", field, m.ContainerPort))
	}
	switch strings.ToLower(m.Protocol) {
	case "", "tcp", "udp", "sctp":
	default:
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s.protocol %q: must be tcp, udp or sctp", field, m.Protocol))
	}
	if m.HostIP != "" && net.ParseIP(m.HostIP) == nil {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "%s.hostIP %q: not an IP address", field, m.HostIP))
	}
	return errors.Join(append(errs, m.validateRange(field))...)
}

// validateRange checks the range key: at least 1, the last host port at
// most 65535, and each host port mapped to the same container port.
func (m PortMapEntry) validateRange(field string) error {
	if m.Range == nil {
		return nil
	}
	n := *m.Range
	switch {
	case n < 1:
		return types.Errorf(types.ErrInvalidConfig, "%s.range %d: must be at least 1", field, n)
	case n > 1 && m.HostPort+n-1 > 65535:
		return types.Errorf(types.ErrInvalidConfig, "%s.range %d: host ports %d-%d pass 65535", field, n, m.HostPort, m.HostPort+n-1)
	case n > 1 && m.ContainerPort != m.HostPort:
		return types.Errorf(types.ErrInvalidConfig, "%s.containerPort %d: host ports %d-%d to container ports %d-%d is a shifted range, "+
			"which is not supported: a range forwards each host port to the container port of the same number, so containerPort must equal hostPort %d "+
			"(nftables cannot add an offset to a port, and a DNAT to a port range lets the kernel pick any port of it)",
			field, m.ContainerPort, m.HostPort, m.HostPort+n-1, m.ContainerPort, m.ContainerPort+n-1, m.HostPort)
	}
	return nil
}

func validChainName(s string) bool {
	return s != "" && len(s) <= 28 && !strings.ContainsAny(s, " \t\n\r\"'")
}

// backendKind returns the backend the options call for: the explicit
// backend, else the one whose options are present, else "" (automatic).
// Options of the other backend are an error.
func (c *Config) backendKind() (string, error) {
	var iptOpts, nftOpts []string
	if c.ExternalSetMarkChain != nil {
		iptOpts = append(iptOpts, "externalSetMarkChain")
	}
	for name, conds := range map[string]*[]string{"conditionsV4": c.ConditionsV4, "conditionsV6": c.ConditionsV6} {
		if conds == nil || len(*conds) == 0 {
			continue
		}
		if first := (*conds)[0]; strings.HasPrefix(first, "-") || strings.HasPrefix(first, "!") {
			iptOpts = append(iptOpts, name)
		} else {
			nftOpts = append(nftOpts, name)
		}
	}
	want := ""
	if c.Backend != nil {
		want = *c.Backend
	}
	mismatch := func(b string, opts []string) error {
		return types.Errorf(types.ErrInvalidConfig, "backend %q was requested but the configuration has options of the other backend: %s", b, strings.Join(opts, ", "))
	}
	switch {
	case want == firewall.KindIPTables && len(nftOpts) > 0:
		return "", mismatch(want, nftOpts)
	case want == firewall.KindNFTables && len(iptOpts) > 0:
		return "", mismatch(want, iptOpts)
	case want == firewall.KindIPTables || want == firewall.KindNFTables:
		return want, nil
	case want != "" || c.Backend != nil:
		return "", types.Errorf(types.ErrInvalidConfig, "backend %q: must be %q or %q", want, firewall.KindIPTables, firewall.KindNFTables)
	case len(iptOpts) > 0 && len(nftOpts) > 0:
		return "", types.Errorf(types.ErrInvalidConfig, "options of both backends: iptables %s, nftables %s", strings.Join(iptOpts, ", "), strings.Join(nftOpts, ", "))
	case len(iptOpts) > 0:
		return firewall.KindIPTables, nil
	case len(nftOpts) > 0:
		return firewall.KindNFTables, nil
	}
	return "", nil
}

// snat returns the effective snat.
func (c *Config) snat() bool { return c.SNAT == nil || *c.SNAT }

// mappings converts the capability entries.
func (c *Config) mappings() []firewall.PortMapping {
	var out []firewall.PortMapping
	for _, m := range c.RuntimeConfig.PortMaps {
		proto := strings.ToLower(m.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pm := firewall.PortMapping{
			HostPort: m.HostPort, ContainerPort: m.ContainerPort, Protocol: proto, HostIP: net.ParseIP(m.HostIP),
		}
		if m.Range != nil && *m.Range > 1 {
			pm.Range = *m.Range
		}
		out = append(out, pm)
	}
	return out
}

// portMaps returns the firewall rules for the container addresses.
func (c *Config) portMaps(v4, v6 *net.IPNet) *firewall.PortMaps {
	pm := &firewall.PortMaps{
		ContainerV4: v4, ContainerV6: v6,
		Mappings: c.mappings(),
		SNAT:     c.snat(),
		MasqAll:  c.MasqAll,
		MarkBit:  DefaultMarkMasqBit,
	}
	if c.MarkMasqBit != nil {
		pm.MarkBit = *c.MarkMasqBit
	}
	if c.ExternalSetMarkChain != nil {
		pm.ExternalSetMarkChain = *c.ExternalSetMarkChain
	}
	if c.ConditionsV4 != nil {
		pm.ConditionsV4 = *c.ConditionsV4
	}
	if c.ConditionsV6 != nil {
		pm.ConditionsV6 = *c.ConditionsV6
	}
	return pm
}
