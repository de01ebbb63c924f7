package main

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// configKeys are Config's own keys (types.NetConfKeys are the others).
var configKeys = []string{"sysctl", "mac", "mtu", "promisc", "allmulti", "txQLen", "dataDir", "runtimeConfig",
	"features", "channels", "args"}

// decodePlain reads the configurations runtimes send on the plain path
// (types.DecodePlain); features, channels and args, rarer, are left to
// encoding/json.
func (c *Config) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &c.NetConf, configKeys, func(rd *jsonscan.Reader, i int) {
		switch configKeys[i] {
		case "sysctl":
			c.Sysctl = Sysctls{}
			rd.Members(func(key string) { c.Sysctl = append(c.Sysctl, Sysctl{Key: key, Value: rd.String()}) })
		case "mac":
			c.MAC = rd.String()
		case "mtu":
			c.MTU = rd.Int()
		case "promisc":
			c.Promisc = types.Ptr(rd.Bool())
		case "allmulti":
			c.Allmulti = types.Ptr(rd.Bool())
		case "txQLen":
			c.TxQLen = types.Ptr(rd.Int())
		case "dataDir":
			c.DataDir = rd.String()
		case "runtimeConfig":
			rd.Object([]string{"mac"}, func(int) { c.RuntimeConfig.MAC = rd.String() })
		default:
			rd.Fail()
		}
	})
}
