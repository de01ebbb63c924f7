package main

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// decodePlain reads the configuration on the plain path (types.DecodePlain).
func (c *Config) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, c.plainFields())
}

// plainFields are Config's own keys (types.NetConfKeys are the others).
func (c *Config) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "snat", Into: &c.SNAT},
		{Key: "masqAll", Into: &c.MasqAll},
		{Key: "markMasqBit", Into: &c.MarkMasqBit},
		{Key: "externalSetMarkChain", Into: &c.ExternalSetMarkChain},
		{Key: "conditionsV4", Into: &c.ConditionsV4},
		{Key: "conditionsV6", Into: &c.ConditionsV6},
		{Key: "backend", Into: &c.Backend},
		{Key: "allowPortRanges", Into: &c.AllowPortRanges},
		{Key: "maxHostPorts", Into: &c.MaxHostPorts},
		{Key: "runtimeConfig", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "portMappings", Into: func(rd *jsonscan.Reader) {
				c.RuntimeConfig.PortMaps = []PortMapEntry{} // [] is an empty list, as encoding/json reads it
				rd.Array(func() {
					var e PortMapEntry
					rd.Fields(e.plainFields())
					c.RuntimeConfig.PortMaps = append(c.RuntimeConfig.PortMaps, e)
				})
			}}})
		}},
	}
}

// plainFields are a port mapping's keys (mappingKeys).
func (e *PortMapEntry) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "hostPort", Into: &e.HostPort}, {Key: "containerPort", Into: &e.ContainerPort},
		{Key: "protocol", Into: &e.Protocol}, {Key: "hostIP", Into: &e.HostIP}, {Key: "range", Into: &e.Range}}
}

// unknownKeysPlain is UnknownMappingKeys on the plain path; false when the
// configuration needs encoding/json.
func unknownKeysPlain(data []byte) ([]string, bool) {
	var out []string
	rd := jsonscan.NewReader(data)
	rd.Object([]string{"runtimeConfig"}, func(int) {
		rd.Object([]string{"portMappings"}, func(int) {
			i := 0
			rd.Array(func() {
				out = append(out, unknownKeys(i, rd)...)
				i++
			})
		})
	})
	return out, rd.OK()
}

// unknownKeys lists the unknown keys of the i-th mapping, sorted, and
// passes over the mapping.
func unknownKeys(i int, rd *jsonscan.Reader) []string {
	var keys []string
	rd.Members(func(key string) {
		if !knownMappingKey(key) {
			keys = append(keys, key)
		}
		rd.Skip()
	})
	return mappingPaths(i, keys)
}
