package main

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// decodePlain reads the configurations runtimes send on the plain path
// (types.DecodePlain).
func (c *Config) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, c.plainFields())
}

// plainFields are Config's own keys (types.NetConfKeys are the others);
// features, channels and args, rarer, are left to encoding/json.
func (c *Config) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "sysctl", Into: func(rd *jsonscan.Reader) {
			c.Sysctl = Sysctls{}
			rd.Members(func(key string) { c.Sysctl = append(c.Sysctl, Sysctl{Key: key, Value: rd.String()}) })
		}},
		{Key: "mac", Into: &c.MAC},
		{Key: "mtu", Into: &c.MTU},
		{Key: "promisc", Into: &c.Promisc},
		{Key: "allmulti", Into: &c.Allmulti},
		{Key: "txQLen", Into: &c.TxQLen},
		{Key: "dataDir", Into: &c.DataDir},
		{Key: "runtimeConfig", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "mac", Into: &c.RuntimeConfig.MAC}})
		}},
		{Key: "features"},
		{Key: "channels"},
		{Key: "args"},
	}
}
