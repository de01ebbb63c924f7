// Package bridgeconf reads and validates the bridge plugin's network
// configuration: its keys (through encoding/json), the node options of
// this suite, the container MAC the runtime asks for, VLANs and isolation,
// every problem reported at once.
package bridgeconf

import (
	"encoding/json"
	"errors"
	"net"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/macaddr"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
	"cnisuite/pkg/vlanplan"
)

// defaultBridge is the bridge name when the configuration gives none.
const defaultBridge = "cni0"

// NetConf is the bridge plugin's network configuration.
type NetConf struct {
	types.NetConf
	BrName                    string                `json:"bridge"`
	IsGW                      bool                  `json:"isGateway"`
	IsDefaultGW               bool                  `json:"isDefaultGateway"`
	ForceAddress              bool                  `json:"forceAddress"`
	IPMasq                    bool                  `json:"ipMasq"`
	IPMasqBackend             *string               `json:"ipMasqBackend,omitempty"`
	MTU                       int                   `json:"mtu"`
	HairpinMode               bool                  `json:"hairpinMode"`
	PromiscMode               bool                  `json:"promiscMode"`
	Vlan                      int                   `json:"vlan"`
	VlanTrunk                 []vlanplan.TrunkEntry `json:"vlanTrunk,omitempty"`
	PreserveDefaultVlan       bool                  `json:"preserveDefaultVlan"`
	MacSpoofChk               bool                  `json:"macspoofchk"`
	EnableDad                 bool                  `json:"enabledad"`
	DisableContainerInterface bool                  `json:"disableContainerInterface"`
	PortIsolation             bool                  `json:"portIsolation"`
	// ICC (bool) and Isolate (false, true or "strict") are decoded by
	// validateIsolation into noICC and isolateMode.
	ICC     json.RawMessage `json:"icc,omitempty"`
	Isolate json.RawMessage `json:"isolate,omitempty"`
	// IngressFilter (bool) is decoded by validateIsolation into
	// filterIngress.
	IngressFilter json.RawMessage `json:"ingressFilter,omitempty"`

	nodeOptions

	Args struct {
		Cni struct {
			Mac string `json:"mac,omitempty"`
			// HostVethName is the host-side veth name a pod asks for.
			HostVethName string `json:"hostVethName,omitempty"`
		} `json:"cni"`
	} `json:"args"`
	RuntimeConfig struct {
		Mac string `json:"mac,omitempty"`
	} `json:"runtimeConfig"`

	// rawIPAM is the ipam object as given, read for the 0.1.0/0.2.0 check.
	rawIPAM json.RawMessage
	// trunkIDs are the trunk VLANs, sorted and without duplicates.
	trunkIDs []int
	// mac is the container MAC chosen from CNI_ARGS, args and runtimeConfig
	// (macaddr.FromCNI).
	mac net.HardwareAddr
	// noICC is icc false; isolateMode is "", "true" or "strict".
	noICC         bool
	isolateMode   string
	filterIngress bool
}

// Decode decodes the configuration.
func Decode(data []byte) (*NetConf, error) {
	return types.DecodeFresh(data, func() *NetConf { return &NetConf{BrName: defaultBridge} })
}

// Load decodes the configuration, applies defaults, picks the container
// MAC from cniArgs (CNI_ARGS) and validates everything, reporting every
// problem at once.
func Load(data []byte, cniArgs string) (*NetConf, error) {
	conf, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if conf.CNIVersion == "" {
		conf.CNIVersion = "0.1.0"
	}
	// Only a 0.1.0/0.2.0 result needs the ipam object as given
	// (ConfigExpressible).
	if fam, _ := version.FamilyOf(conf.CNIVersion); fam == version.Family020 {
		var raw struct {
			IPAM json.RawMessage `json:"ipam"`
		}
		if err := json.Unmarshal(data, &raw); err == nil {
			conf.rawIPAM = raw.IPAM
		}
	}
	if conf.IsDefaultGW {
		conf.IsGW = true
	}
	var macErr error
	conf.mac, macErr = macaddr.FromCNI(cniArgs, conf.Args.Cni.Mac, conf.RuntimeConfig.Mac)
	if err := errors.Join(macErr, conf.validate()); err != nil {
		return nil, err
	}
	return conf, nil
}

// HasIPAM reports whether an IPAM plugin is configured; without one the
// bridge works at layer 2 only.
func (c *NetConf) HasIPAM() bool { return c.IPAM.Type != "" }

// Backend returns the configured masquerade backend, "" for automatic.
func (c *NetConf) Backend() string {
	if c.IPMasqBackend == nil {
		return ""
	}
	return *c.IPMasqBackend
}

// selfType is the plugin type of this binary as a configuration names it.
const selfType = "bridge"

// ValidateIPAMType refuses this plugin as its own IPAM plugin: it would hand
// the same configuration to itself, each level starting the next, without
// end (test/fuzz found DEL and STATUS starting ~90 processes a second).
func ValidateIPAMType(t string) error {
	if t == selfType {
		return types.Errorf(types.ErrInvalidConfig, "ipam.type %q: the bridge plugin cannot be its own IPAM plugin", t)
	}
	return nil
}

func (c *NetConf) validate() error {
	errs := []error{types.ValidateLinkName("bridge", c.BrName), c.validateVlans(), c.validateIsolation(), c.nodeOptions.validate(),
		types.ConfigExpressible(c.CNIVersion, c.HasIPAM(), c.rawIPAM)} // what a 0.1.0/0.2.0 result cannot hold
	if n := c.Args.Cni.HostVethName; n != "" {
		errs = append(errs, types.ValidateLinkName("args.cni.hostVethName", n))
	}
	invalid := func(format string, a ...any) {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, format, a...))
	}
	if c.HairpinMode && c.PromiscMode {
		invalid("hairpinMode and promiscMode: cannot set hairpin mode and promiscuous mode at the same time")
	}
	if (c.IPMasqSourceIPv4 != "" || c.IPMasqSourceIPv6 != "") && !c.IPMasq {
		invalid("ipMasqSourceIPv4/ipMasqSourceIPv6: need ipMasq")
	}
	if c.DisableContainerInterface && c.HasIPAM() {
		invalid("disableContainerInterface: cannot use IPAM (ipam.type %q) when the container interface is left down", c.IPAM.Type)
	}
	errs = append(errs, ValidateIPAMType(c.IPAM.Type))
	if c.MTU < 0 || c.MTU > 65535 || (c.MTU > 0 && c.MTU < 68) {
		invalid("mtu %d: must be 0 (kernel default) or between 68 and 65535", c.MTU)
	}
	switch b := c.Backend(); b {
	case "", firewall.KindIPTables, firewall.KindNFTables:
	default:
		invalid("ipMasqBackend %q: must be %q or %q (or absent for automatic)", b, firewall.KindIPTables, firewall.KindNFTables)
	}
	return errors.Join(errs...)
}

// validateVlans checks vlan and vlanTrunk (vlanplan.Validate), fills
// trunkIDs, and checks the name of the VLAN's gateway interface.
func (c *NetConf) validateVlans() error {
	ids, err := vlanplan.Validate(c.Vlan, c.VlanTrunk)
	c.trunkIDs = ids
	if c.Vlan > 0 && len(c.VlanGatewayName()) > types.MaxIfNameLen && c.IsGW && c.HasIPAM() {
		err = errors.Join(err, types.Errorf(types.ErrInvalidConfig,
			"bridge %q with vlan %d: the gateway interface name %q is longer than %d bytes",
			c.BrName, c.Vlan, c.VlanGatewayName(), types.MaxIfNameLen))
	}
	return err
}

// VlanGatewayName is the host interface carrying a VLAN's gateway address.
func (c *NetConf) VlanGatewayName() string { return vlanplan.GatewayName(c.BrName, c.Vlan) }

// TrunkIDs are the trunk VLANs, sorted and without duplicates (Load fills
// them).
func (c *NetConf) TrunkIDs() []int { return c.trunkIDs }

// MAC is the container MAC chosen from CNI_ARGS, args and runtimeConfig,
// nil for the kernel's own (Load fills it).
func (c *NetConf) MAC() net.HardwareAddr { return c.mac }
