package types

import "cnisuite/pkg/jsonscan"

// NetConfKeys are NetConf's keys, as encoding/json matches them.
var NetConfKeys = []string{"cniVersion", "name", "type", "capabilities", "ipam", "dns", "prevResult",
	"cni.dev/valid-attachments", "cni.dev/attachments"}

// DecodePlain reads a configuration on the plain path (pkg/jsonscan says
// why): the plugin's own keys through member, which reads the value of
// keys[i] from rd, or calls rd.Fail for a key or shape it leaves to
// encoding/json; NetConf's other keys into nc. A key of keys that is also
// one of NetConf's is the plugin's, as encoding/json gives a key to the
// outer struct's field. keys must hold every other key the plugin's
// configuration type decodes (scantest.SameKeys checks it), so that a key
// written in another case goes to the general path too.
//
// On false the caller decodes data with Decode, into a fresh value: the
// plain path may have filled part of this one.
func DecodePlain(data []byte, nc *NetConf, keys []string, member func(rd *jsonscan.Reader, i int)) bool {
	rd := jsonscan.NewReader(data)
	all := append(append(make([]string, 0, len(keys)+len(NetConfKeys)), keys...), NetConfKeys...)
	rd.Object(all, func(i int) {
		if i < len(keys) {
			member(rd, i)
			return
		}
		nc.plainMember(rd, i-len(keys))
	})
	return rd.OK()
}

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
	rd.Object([]string{"cniVersion"}, func(int) { h.CNIVersion = rd.String() })
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

func (c *NetConf) plainMember(rd *jsonscan.Reader, i int) {
	switch NetConfKeys[i] {
	case "cniVersion":
		c.CNIVersion = rd.String()
	case "name":
		c.Name = rd.String()
	case "type":
		c.Type = rd.String()
	case "capabilities":
		c.Capabilities = map[string]bool{}
		rd.Members(func(key string) { c.Capabilities[key] = rd.Bool() })
	case "ipam":
		rd.Object([]string{"type"}, func(int) { c.IPAM.Type = rd.String() })
	case "dns":
		c.DNS = plainDNS(rd)
	case "prevResult":
		c.RawPrevResult = rd.Raw()
	default: // the GC keys, in GC calls only
		rd.Fail()
	}
}
