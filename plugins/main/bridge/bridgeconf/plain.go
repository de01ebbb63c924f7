package bridgeconf

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// decodePlain reads the configuration on the plain path
// (types.DecodePlain).
func (c *NetConf) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, c.plainFields())
}

// plainFields are NetConf's own keys, nodeOptions' included
// (types.NetConfKeys are the others); vlanTrunk, rarer, is left to
// encoding/json.
func (c *NetConf) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "bridge", Into: &c.BrName},
		{Key: "isGateway", Into: &c.IsGW},
		{Key: "isDefaultGateway", Into: &c.IsDefaultGW},
		{Key: "forceAddress", Into: &c.ForceAddress},
		{Key: "ipMasq", Into: &c.IPMasq},
		{Key: "ipMasqBackend", Into: &c.IPMasqBackend},
		{Key: "mtu", Into: &c.MTU},
		{Key: "hairpinMode", Into: &c.HairpinMode},
		{Key: "promiscMode", Into: &c.PromiscMode},
		{Key: "vlan", Into: &c.Vlan},
		{Key: "vlanTrunk"},
		{Key: "preserveDefaultVlan", Into: &c.PreserveDefaultVlan},
		{Key: "macspoofchk", Into: &c.MacSpoofChk},
		{Key: "enabledad", Into: &c.EnableDad},
		{Key: "disableContainerInterface", Into: &c.DisableContainerInterface},
		{Key: "portIsolation", Into: &c.PortIsolation},
		{Key: "icc", Into: &c.ICC},
		{Key: "isolate", Into: &c.Isolate},
		{Key: "ingressFilter", Into: &c.IngressFilter},
		{Key: "mtuFromUplink", Into: &c.MTUFromUplink},
		{Key: "defaultRouteMetric", Into: &c.DefaultRouteMetric},
		{Key: "defaultRouteMetricIPv6", Into: &c.DefaultRouteMetricIPv6},
		{Key: "hostVethPrefix", Into: &c.HostVethPrefix},
		{Key: "removeEmptyBridge", Into: &c.RemoveEmptyBridge},
		{Key: "ipMasqSourceIPv4", Into: &c.IPMasqSourceIPv4},
		{Key: "ipMasqSourceIPv6", Into: &c.IPMasqSourceIPv6},
		{Key: "args", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "cni", Into: func(rd *jsonscan.Reader) {
				rd.Fields([]jsonscan.Field{{Key: "mac", Into: &c.Args.Cni.Mac}, {Key: "hostVethName", Into: &c.Args.Cni.HostVethName}})
			}}})
		}},
		{Key: "runtimeConfig", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "mac", Into: &c.RuntimeConfig.Mac}})
		}},
	}
}
