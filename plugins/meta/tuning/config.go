package main

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"

	"cnisuite/pkg/macaddr"
	"cnisuite/pkg/rootless"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/plugins/meta/tuning/ethconf"
)

// DefaultDataDir holds the state files from which DEL puts things back.
const DefaultDataDir = "/run/cni/tuning"

// Config is the tuning configuration. After Load it holds the effective
// values: CNI_ARGS, runtimeConfig and args.cni applied over the keys.
type Config struct {
	types.NetConf

	// Sysctl are written inside the container network namespace, in order.
	Sysctl Sysctls `json:"sysctl,omitempty"`
	// MAC is the container interface's new hardware address.
	MAC string `json:"mac,omitempty"`
	// MTU is the container interface's new MTU; 0 leaves it.
	MTU int `json:"mtu,omitempty"`
	// Promisc turns promiscuous mode on or off; unset leaves it.
	Promisc *bool `json:"promisc,omitempty"`
	// Allmulti turns all-multicast mode on or off; unset leaves it.
	Allmulti *bool `json:"allmulti,omitempty"`
	// TxQLen is the new transmit queue length; unset leaves it.
	TxQLen *int `json:"txQLen,omitempty"`
	// Features turns features (offloads) of the interface on or off, by
	// their kernel names or ethtool's group names; unset leaves them.
	Features ethconf.Features `json:"features,omitempty"`
	// Channels sets the interface's queue counts; unset leaves them.
	Channels *ethconf.Channels `json:"channels,omitempty"`
	// DataDir holds the state files; DefaultDataDir when empty.
	DataDir string `json:"dataDir,omitempty"`
	// dataDirDefault is set when dataDir was not given.
	dataDirDefault bool

	RuntimeConfig struct {
		MAC string `json:"mac,omitempty"`
	} `json:"runtimeConfig,omitempty"`
	Args *struct {
		CNI *ArgsCNI `json:"cni,omitempty"`
	} `json:"args,omitempty"`
}

// ArgsCNI are the overrides a runtime may pass in args.cni.
type ArgsCNI struct {
	Sysctl   Sysctls `json:"sysctl,omitempty"`
	MAC      string  `json:"mac,omitempty"`
	MTU      *int    `json:"mtu,omitempty"`
	Promisc  *bool   `json:"promisc,omitempty"`
	Allmulti *bool   `json:"allmulti,omitempty"`
	TxQLen   *int    `json:"txQLen,omitempty"`
	// Features are merged over the top-level features, name by name.
	Features ethconf.Features `json:"features,omitempty"`
	// Channels replace the top-level counts, count by count.
	Channels *ethconf.Channels `json:"channels,omitempty"`
}

// Load decodes the configuration and applies, lowest precedence first, the
// MAC of CNI_ARGS, runtimeConfig.mac and then every key of args.cni.
func Load(stdin []byte, cniArgs string) (*Config, error) {
	c := &Config{}
	if err := decodeConfig(stdin, c); err != nil {
		return nil, err
	}
	args, err := types.ParseArgs(cniArgs)
	if err != nil {
		return nil, err
	}
	if mac := args["MAC"]; mac != "" {
		c.MAC = mac
	}
	if c.RuntimeConfig.MAC != "" {
		c.MAC = c.RuntimeConfig.MAC
	}
	if c.Args != nil && c.Args.CNI != nil {
		c.applyArgs(c.Args.CNI)
	}
	if c.DataDir == "" {
		c.DataDir, c.dataDirDefault = DefaultDataDir, true
	}
	return c, nil
}

// inEnv resolves what depends on the call's environment env: without the
// node's root (a rootless runtime), a dataDir left to its default is
// /run/cni/tuning when the runtime made it writable, else
// $XDG_RUNTIME_DIR/cni/tuning (pkg/rootless).
func (c *Config) inEnv(env []string) {
	if c.dataDirDefault {
		c.DataDir = rootless.StateDir(DefaultDataDir, "tuning", env)
	}
}

func (c *Config) applyArgs(a *ArgsCNI) {
	c.Sysctl = c.Sysctl.Merge(a.Sysctl)
	if a.MAC != "" {
		c.MAC = a.MAC
	}
	if a.MTU != nil {
		c.MTU = *a.MTU
	}
	if a.Promisc != nil {
		c.Promisc = a.Promisc
	}
	if a.Allmulti != nil {
		c.Allmulti = a.Allmulti
	}
	if a.TxQLen != nil {
		c.TxQLen = a.TxQLen
	}
	c.Features = c.Features.Merge(a.Features)
	c.Channels = c.Channels.Merge(a.Channels)
}

// decodeConfig unmarshals data into c. A JSON value of the wrong type is an
// invalid configuration naming the field; malformed JSON is a decoding error.
func decodeConfig(data []byte, c *Config) error {
	err := json.Unmarshal(data, c)
	if err == nil {
		return nil
	}
	if errors.Is(err, types.ErrInvalidConfig) {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "configuration"
		}
		return types.Errorf(types.ErrInvalidConfig, "%s: got a JSON %s, want %s", field, te.Value, jsonTypeName(te.Type.String()))
	}
	return types.Errorf(types.ErrDecoding, "decoding tuning configuration: %w", err)
}

func jsonTypeName(goType string) string {
	goType = strings.TrimPrefix(goType, "*")
	switch {
	case goType == "bool":
		return "a boolean"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	}
	return "a " + goType
}

// Validate reports every problem of the effective configuration at once.
// Paths of sysctls are checked for ifName.
func (c *Config) Validate(ifName string) error {
	var errs []error
	if err := types.ValidateIfName(ifName); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, c.validateSysctls(ifName))
	}
	if c.MAC != "" {
		_, err := macaddr.ParseUnicast("mac", c.MAC)
		errs = append(errs, err)
	}
	if c.MTU < 0 {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "mtu %d: must not be negative", c.MTU))
	}
	if c.TxQLen != nil && *c.TxQLen < 0 {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "txQLen %d: must not be negative", *c.TxQLen))
	}
	if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "dataDir %q: must be an absolute path", c.DataDir))
	}
	errs = append(errs, c.Features.Validate(), c.Channels.Validate())
	return errors.Join(errs...)
}

func (c *Config) validateSysctls(ifName string) error {
	var errs []error
	for _, s := range c.Sysctl {
		if _, err := SysctlPath(s.Key, ifName); err != nil {
			errs = append(errs, err)
		}
		if strings.ContainsAny(s.Value, "\n\x00") {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "sysctl %q: value %q holds a newline or NUL", s.Key, s.Value))
		}
	}
	return errors.Join(errs...)
}

// Settings resolves the sysctl keys for ifName; Validate has accepted them.
func (c *Config) Settings(ifName string) ([]backup.Setting, error) {
	out := make([]backup.Setting, 0, len(c.Sysctl))
	for _, s := range c.Sysctl {
		p, err := SysctlPath(s.Key, ifName)
		if err != nil {
			return nil, err
		}
		out = append(out, backup.Setting{Path: p, Value: s.Value})
	}
	return out, nil
}

// HardwareAddr returns the parsed MAC, nil when none is asked for.
func (c *Config) HardwareAddr() net.HardwareAddr {
	mac, err := net.ParseMAC(c.MAC)
	if err != nil {
		return nil
	}
	return mac
}
