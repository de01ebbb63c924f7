package hostlocal

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

var (
	// confKeys are netConf's own keys (types.NetConfKeys are the others;
	// its ipam is netConf's).
	confKeys = []string{"ipam", "runtimeConfig", "args"}
	// ipamKeys are ipamConf's keys, its embedded rangeConf's included.
	ipamKeys = []string{"type", "subnet", "rangeStart", "rangeEnd", "gateway", "ranges", "routes", "dataDir", "resolvConf"}
	// rangeKeys are rangeConf's keys.
	rangeKeys = []string{"subnet", "rangeStart", "rangeEnd", "gateway"}
	// runtimeKeys are runtimeConfig's keys.
	runtimeKeys = []string{"ips", "ipRanges"}
)

// decodePlain reads the configuration on the plain path (types.DecodePlain).
func (n *netConf) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &n.NetConf, confKeys, func(rd *jsonscan.Reader, i int) {
		switch confKeys[i] {
		case "ipam":
			n.IPAM = plainIPAM(rd)
		case "runtimeConfig":
			rd.Object(runtimeKeys, func(i int) {
				if i == 0 {
					n.RuntimeConfig.IPs = rd.Strings()
				} else {
					n.RuntimeConfig.IPRanges = plainRangeSets(rd)
				}
			})
		case "args":
			rd.Object([]string{"cni"}, func(int) {
				rd.Object([]string{"ips"}, func(int) { n.Args.CNI.IPs = types.Ptr(rd.Strings()) })
			})
		}
	})
}

func plainIPAM(rd *jsonscan.Reader) *ipamConf {
	c := &ipamConf{}
	rd.Object(ipamKeys, func(i int) {
		switch ipamKeys[i] {
		case "type":
			c.Type = rd.String()
		case "ranges":
			c.Ranges = plainRangeSets(rd)
		case "routes":
			c.Routes = []*types.Route{} // [] is an empty list, as encoding/json reads it
			rd.Array(func() { c.Routes = append(c.Routes, types.ReadRoute(rd)) })
		case "dataDir":
			c.DataDir = rd.String()
		case "resolvConf":
			c.ResolvConf = rd.String()
		default:
			c.rangeConf.member(rd, ipamKeys[i])
		}
	})
	return c
}

func plainRangeSets(rd *jsonscan.Reader) [][]rangeConf {
	sets := [][]rangeConf{}
	rd.Array(func() {
		set := []rangeConf{}
		rd.Array(func() {
			var r rangeConf
			rd.Object(rangeKeys, func(i int) { r.member(rd, rangeKeys[i]) })
			set = append(set, r)
		})
		sets = append(sets, set)
	})
	return sets
}

// member reads the value of one of rangeKeys.
func (r *rangeConf) member(rd *jsonscan.Reader, key string) {
	switch key {
	case "subnet":
		r.Subnet = rd.String()
	case "rangeStart":
		r.RangeStart = rd.String()
	case "rangeEnd":
		r.RangeEnd = rd.String()
	case "gateway":
		r.Gateway = rd.String()
	}
}
