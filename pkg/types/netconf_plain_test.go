package types

import (
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
)

func TestNetConfKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(NetConf{}), (&NetConf{}).plainFields())
}

// FuzzPlainNetConf: wherever DecodePlain answers, Decode answers the same;
// a configuration as runtimes send it takes the plain path.
func FuzzPlainNetConf(f *testing.F) {
	typical := `{"cniVersion":"1.0.0","name":"k8s","type":"portmap","capabilities":{"portMappings":true},"ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/16"}]]},"dns":{"nameservers":["10.0.0.10"]},"prevResult":{"cniVersion":"1.0.0"},"runtimeConfig":{"portMappings":[]}}`
	var c NetConf
	if !DecodePlain([]byte(typical), &c, nil) || c.IPAM.Type != "host-local" || !c.Capabilities["portMappings"] {
		f.Fatalf("plain path on %s: %+v", typical, c)
	}
	f.Add([]byte(typical))
	for _, s := range oddResults {
		f.Add([]byte(`{"cniVersion":"1.0.0","name":"n","prevResult":` + s + `}`))
	}
	f.Add([]byte(`{"cni.dev/attachments":[],"IPAM":{"Type":"x"},"capabilities":{"a":true,"a":false}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var head struct {
			CNIVersion string `json:"cniVersion"`
		}
		headErr := Decode(data, &head)
		if v, err := DecodeVersion(data); v != head.CNIVersion || (err == nil) != (headErr == nil) {
			t.Fatalf("DecodeVersion(%s) = %q, %v; Decode: %q, %v", data, v, err, head.CNIVersion, headErr)
		}
		var plain, general NetConf
		if !DecodePlain(data, &plain, nil) {
			return
		}
		if err := Decode(data, &general); err != nil {
			t.Fatalf("plain path took what Decode refuses (%v): %s", err, data)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, general)
		}
	})
}
