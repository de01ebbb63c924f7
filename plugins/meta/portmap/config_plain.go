package main

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// configKeys are Config's own keys (types.NetConfKeys are the others).
var configKeys = []string{"snat", "masqAll", "markMasqBit", "externalSetMarkChain", "conditionsV4", "conditionsV6",
	"backend", "runtimeConfig"}

// entryKeys are PortMapEntry's keys, in the order of its fields.
var entryKeys = []string{"hostPort", "containerPort", "protocol", "hostIP", "range"}

// decodePlain reads the configuration on the plain path (types.DecodePlain).
func (c *Config) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, configKeys, func(rd *jsonscan.Reader, i int) {
		switch configKeys[i] {
		case "snat":
			c.SNAT = types.Ptr(rd.Bool())
		case "masqAll":
			c.MasqAll = rd.Bool()
		case "markMasqBit":
			c.MarkMasqBit = types.Ptr(rd.Int())
		case "externalSetMarkChain":
			c.ExternalSetMarkChain = types.Ptr(rd.String())
		case "conditionsV4":
			c.ConditionsV4 = types.Ptr(rd.Strings())
		case "conditionsV6":
			c.ConditionsV6 = types.Ptr(rd.Strings())
		case "backend":
			c.Backend = types.Ptr(rd.String())
		case "runtimeConfig":
			rd.Object([]string{"portMappings"}, func(int) {
				c.RuntimeConfig.PortMaps = []PortMapEntry{} // [] is an empty list, as encoding/json reads it
				rd.Array(func() { c.RuntimeConfig.PortMaps = append(c.RuntimeConfig.PortMaps, plainEntry(rd)) })
			})
		}
	})
}

func plainEntry(rd *jsonscan.Reader) PortMapEntry {
	var e PortMapEntry
	rd.Object(entryKeys, func(i int) {
		switch entryKeys[i] {
		case "hostPort":
			e.HostPort = rd.Int()
		case "containerPort":
			e.ContainerPort = rd.Int()
		case "protocol":
			e.Protocol = rd.String()
		case "hostIP":
			e.HostIP = rd.String()
		case "range":
			e.Range = types.Ptr(rd.Int())
		}
	})
	return e
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
