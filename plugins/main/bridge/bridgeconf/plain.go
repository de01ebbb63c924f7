package bridgeconf

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// configKeys are NetConf's own keys, nodeOptions' included
// (types.NetConfKeys are the others).
var configKeys = []string{"bridge", "isGateway", "isDefaultGateway", "forceAddress", "ipMasq", "ipMasqBackend",
	"mtu", "hairpinMode", "promiscMode", "vlan", "vlanTrunk", "preserveDefaultVlan", "macspoofchk", "enabledad",
	"disableContainerInterface", "portIsolation", "icc", "isolate", "ingressFilter", "mtuFromUplink",
	"defaultRouteMetric", "defaultRouteMetricIPv6", "hostVethPrefix", "removeEmptyBridge", "ipMasqSourceIPv4",
	"ipMasqSourceIPv6", "args", "runtimeConfig"}

// decodePlain reads the configuration on the plain path
// (types.DecodePlain); vlanTrunk, rarer, is left to encoding/json.
func (c *NetConf) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, configKeys, func(rd *jsonscan.Reader, i int) {
		if p := c.flag(configKeys[i]); p != nil {
			*p = rd.Bool()
			return
		}
		switch configKeys[i] {
		case "bridge":
			c.BrName = rd.String()
		case "ipMasqBackend":
			c.IPMasqBackend = types.Ptr(rd.String())
		case "mtu":
			c.MTU = rd.Int()
		case "vlan":
			c.Vlan = rd.Int()
		case "icc":
			c.ICC = rd.Raw()
		case "isolate":
			c.Isolate = rd.Raw()
		case "ingressFilter":
			c.IngressFilter = rd.Raw()
		case "defaultRouteMetric":
			c.DefaultRouteMetric = types.Ptr(rd.Int())
		case "defaultRouteMetricIPv6":
			c.DefaultRouteMetricIPv6 = types.Ptr(rd.Int())
		case "hostVethPrefix":
			c.HostVethPrefix = rd.String()
		case "ipMasqSourceIPv4":
			c.IPMasqSourceIPv4 = rd.String()
		case "ipMasqSourceIPv6":
			c.IPMasqSourceIPv6 = rd.String()
		case "args":
			rd.Object([]string{"cni"}, func(int) {
				rd.Object([]string{"mac", "hostVethName"}, func(i int) {
					if i == 0 {
						c.Args.Cni.Mac = rd.String()
					} else {
						c.Args.Cni.HostVethName = rd.String()
					}
				})
			})
		case "runtimeConfig":
			rd.Object([]string{"mac"}, func(int) { c.RuntimeConfig.Mac = rd.String() })
		default: // vlanTrunk
			rd.Fail()
		}
	})
}

// flag returns the boolean field of key, nil when key is not a boolean's.
func (c *NetConf) flag(key string) *bool {
	switch key {
	case "isGateway":
		return &c.IsGW
	case "isDefaultGateway":
		return &c.IsDefaultGW
	case "forceAddress":
		return &c.ForceAddress
	case "ipMasq":
		return &c.IPMasq
	case "hairpinMode":
		return &c.HairpinMode
	case "promiscMode":
		return &c.PromiscMode
	case "preserveDefaultVlan":
		return &c.PreserveDefaultVlan
	case "macspoofchk":
		return &c.MacSpoofChk
	case "enabledad":
		return &c.EnableDad
	case "disableContainerInterface":
		return &c.DisableContainerInterface
	case "portIsolation":
		return &c.PortIsolation
	case "mtuFromUplink":
		return &c.MTUFromUplink
	case "removeEmptyBridge":
		return &c.RemoveEmptyBridge
	}
	return nil
}
