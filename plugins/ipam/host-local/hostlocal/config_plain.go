package hostlocal

import (
	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/types"
)

// decodePlain reads the configuration on the plain path (types.DecodePlain).
func (n *netConf) decodePlain(data []byte) bool {
	return types.DecodePlain(data, &n.NetConf, n.plainFields())
}

// plainFields are netConf's own keys (types.NetConfKeys are the others;
// its ipam is netConf's).
func (n *netConf) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "ipam", Into: func(rd *jsonscan.Reader) {
			n.IPAM = &ipamConf{}
			rd.Fields(n.IPAM.plainFields())
		}},
		{Key: "runtimeConfig", Into: func(rd *jsonscan.Reader) { rd.Fields(n.RuntimeConfig.plainFields()) }},
		{Key: "args", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "cni", Into: func(rd *jsonscan.Reader) {
				rd.Fields([]jsonscan.Field{{Key: "ips", Into: &n.Args.CNI.IPs}})
			}}})
		}},
	}
}

// plainFields are ipamConf's keys, its embedded rangeConf's included.
func (c *ipamConf) plainFields() []jsonscan.Field {
	return append([]jsonscan.Field{
		{Key: "type", Into: &c.Type},
		{Key: "ranges", Into: func(rd *jsonscan.Reader) { c.Ranges = plainRangeSets(rd) }},
		{Key: "routes", Into: func(rd *jsonscan.Reader) {
			c.Routes = []*types.Route{} // [] is an empty list, as encoding/json reads it
			rd.Array(func() { c.Routes = append(c.Routes, types.ReadRoute(rd)) })
		}},
		{Key: "dataDir", Into: &c.DataDir},
		{Key: "resolvConf", Into: &c.ResolvConf},
	}, c.rangeConf.plainFields()...)
}

func (r *rangeConf) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "subnet", Into: &r.Subnet}, {Key: "rangeStart", Into: &r.RangeStart},
		{Key: "rangeEnd", Into: &r.RangeEnd}, {Key: "gateway", Into: &r.Gateway}}
}

func (c *runtimeConfig) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "ips", Into: &c.IPs},
		{Key: "ipRanges", Into: func(rd *jsonscan.Reader) { c.IPRanges = plainRangeSets(rd) }}}
}

func plainRangeSets(rd *jsonscan.Reader) [][]rangeConf {
	sets := [][]rangeConf{}
	rd.Array(func() {
		set := []rangeConf{}
		rd.Array(func() {
			var r rangeConf
			rd.Fields(r.plainFields())
			set = append(set, r)
		})
		sets = append(sets, set)
	})
	return sets
}
