package hostlocal

import (
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
	"cnisuite/pkg/types"
)

// runtimeConfigs are host-local configurations as bridge and runtimes pass
// them (the whole network configuration of the delegating plugin).
var runtimeConfigs = []string{
	`{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.1.0/24"}]]}}`,
	`{"cniVersion":"1.1.0","name":"podman","type":"bridge","ipam":{"type":"host-local","subnet":"10.0.0.0/8","rangeStart":"10.0.0.10","rangeEnd":"10.0.0.200","gateway":"10.0.0.1","ranges":[[{"subnet":"10.88.0.0/16","gateway":"10.88.0.1"},{"subnet":"10.89.0.0/16"}],[{"subnet":"fd00::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0","gw":"fd00::1"}],"dataDir":"/run/ipam","resolvConf":"/etc/resolv.conf"},"runtimeConfig":{"ips":["10.88.0.5/16"],"ipRanges":[[{"subnet":"10.90.0.0/16"}]]},"args":{"cni":{"ips":["10.88.0.6"]}},"capabilities":{"ips":true,"ipRanges":true}}`,
	`{"cniVersion":"0.4.0","name":"n","ipam":{"type":"host-local","ranges":[],"routes":[]}}`,
}

func TestPlainConfigKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(netConf{}), (&netConf{}).plainFields(), types.NetConfKeys())
	scantest.SameFields(t, reflect.TypeOf(ipamConf{}), (&ipamConf{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(rangeConf{}), (&rangeConf{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(runtimeConfig{}), (&runtimeConfig{}).plainFields())
}

// TestRuntimeConfigsArePlain: what runtimes send takes the plain path and
// decodes as encoding/json decodes it.
func TestRuntimeConfigsArePlain(t *testing.T) {
	for _, s := range runtimeConfigs {
		var plain netConf
		if !plain.decodePlain([]byte(s)) {
			t.Fatalf("plain path refused %s", s)
		}
		samePlain(t, []byte(s), &plain)
	}
}

// samePlain fails t unless types.Decode reads data as plain.
func samePlain(t *testing.T, data []byte, plain *netConf) {
	t.Helper()
	var general netConf
	if err := types.Decode(data, &general); err != nil {
		t.Fatalf("plain path took what encoding/json refuses (%v): %s", err, data)
	}
	if !reflect.DeepEqual(plain, &general) {
		t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, &general)
	}
}

// FuzzPlainConfig: wherever the plain path answers, encoding/json answers
// the same.
func FuzzPlainConfig(f *testing.F) {
	for _, s := range runtimeConfigs {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"ipam":{"Ranges":[[null]],"routes":[null,{"dst":"1.2.3.4/32","gw":"x"}]},"args":{"cni":{"ips":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain netConf
		if plain.decodePlain(data) {
			samePlain(t, data, &plain)
		}
	})
}
