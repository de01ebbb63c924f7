package types

import (
	"slices"

	"cnisuite/pkg/jsonscan"
)

// DecodePlain reads a configuration on the plain path (pkg/jsonscan says
// why): the plugin's own keys into fields, NetConf's other keys into nc. A
// key of fields that is also one of NetConf's is the plugin's, as
// encoding/json gives a key to the outer struct's field. fields must hold
// every other key the plugin's configuration type decodes (scantest.SameKeys
// checks it), so that a key written in another case goes to the general
// path too; a field whose Into is nil leaves its key to encoding/json.
//
// On false the caller decodes data with Decode, into a fresh value: the
// plain path may have filled part of this one.
func DecodePlain(data []byte, nc *NetConf, fields []jsonscan.Field) bool {
	rd := jsonscan.NewReader(data)
	rd.Fields(slices.Concat(fields, nc.plainFields()))
	return rd.OK()
}

// NetConfKeys are NetConf's keys, as the plain path reads them.
func NetConfKeys() []string { return jsonscan.Keys((&NetConf{}).plainFields()) }

// DecodeFresh decodes a configuration into a value fresh makes (new(T)
// when fresh is nil): on the plain path when plain takes data, otherwise by
// Decode into another fresh value, since the plain path may have filled
// part of the first.
func DecodeFresh[T any](data []byte, fresh func() *T, plain func(*T, []byte) bool) (*T, error) {
	if fresh == nil {
		fresh = func() *T { return new(T) }
	}
	v := fresh()
	if plain(v, data) {
		return v, nil
	}
	v = fresh()
	if err := Decode(data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// versionHead is the cniVersion of a configuration.
type versionHead struct {
	CNIVersion string `json:"cniVersion"`
}

func (h *versionHead) decodePlain(data []byte) bool {
	rd := jsonscan.NewReader(data)
	rd.Fields([]jsonscan.Field{{Key: "cniVersion", Into: &h.CNIVersion}})
	return rd.OK()
}

// DecodeVersion reads the cniVersion of a configuration.
func DecodeVersion(data []byte) (string, error) {
	h, err := DecodeFresh(data, nil, (*versionHead).decodePlain)
	if err != nil {
		return "", err
	}
	return h.CNIVersion, nil
}

// ReadRoute reads a route on the plain path, as Route's UnmarshalJSON.
func ReadRoute(rd *jsonscan.Reader) *Route { return plainRoute(rd) }

// plainFields are NetConf's keys on the plain path; the GC keys, in GC
// calls only, are left to encoding/json.
func (c *NetConf) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "cniVersion", Into: &c.CNIVersion},
		{Key: "name", Into: &c.Name},
		{Key: "type", Into: &c.Type},
		{Key: "capabilities", Into: func(rd *jsonscan.Reader) {
			c.Capabilities = map[string]bool{}
			rd.Members(func(key string) { c.Capabilities[key] = rd.Bool() })
		}},
		{Key: "ipam", Into: func(rd *jsonscan.Reader) {
			rd.Fields([]jsonscan.Field{{Key: "type", Into: &c.IPAM.Type}})
		}},
		{Key: "dns", Into: func(rd *jsonscan.Reader) { c.DNS = plainDNS(rd) }},
		{Key: "prevResult", Into: &c.RawPrevResult},
		{Key: "cni.dev/valid-attachments"},
		{Key: "cni.dev/attachments"},
	}
}
