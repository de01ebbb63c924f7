package bridgeconf

import (
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
	"cnisuite/pkg/types"
)

// runtimeConfigs are bridge configurations as libcni, containerd, CRI-O
// and podman pass them.
var runtimeConfigs = []string{
	`{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"bridge","bridge":"cni0","isGateway":true,"isDefaultGateway":true,"ipMasq":true,"hairpinMode":true,"mtu":1450,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.1.0/24"}]]}}`,
	`{"cniVersion":"1.0.0","name":"podman","type":"bridge","bridge":"podman0","isGateway":true,"ipMasq":true,"ipMasqBackend":"nftables","hairpinMode":true,"promiscMode":false,"vlan":0,"forceAddress":false,"macspoofchk":true,"enabledad":false,"disableContainerInterface":false,"portIsolation":false,"preserveDefaultVlan":true,"icc":false,"isolate":"strict","ingressFilter":true,"mtuFromUplink":true,"defaultRouteMetric":100,"defaultRouteMetricIPv6":1024,"hostVethPrefix":"cni","removeEmptyBridge":true,"ipMasqSourceIPv4":"192.0.2.1","ipMasqSourceIPv6":"2001:db8::1","args":{"cni":{"mac":"0a:58:0a:58:00:05","hostVethName":"vethx"}},"runtimeConfig":{"mac":"0a:58:0a:58:00:06","ips":["10.0.0.5/24"]},"capabilities":{"mac":true,"ips":true},"ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/16","gateway":"10.88.0.1"}]],"routes":[{"dst":"0.0.0.0/0"}]},"dns":{"nameservers":["10.88.0.1"]}}`,
	`{"cniVersion":"0.2.0","name":"old","type":"bridge"}`,
}

func TestPlainConfigKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(NetConf{}), (&NetConf{}).plainFields(), types.NetConfKeys())
}

// TestRuntimeConfigsArePlain: what runtimes send takes the plain path and
// decodes as encoding/json decodes it.
func TestRuntimeConfigsArePlain(t *testing.T) {
	for _, s := range runtimeConfigs {
		plain := &NetConf{BrName: defaultBridge}
		if !plain.decodePlain([]byte(s)) {
			t.Fatalf("plain path refused %s", s)
		}
		samePlain(t, []byte(s), plain)
	}
}

// samePlain fails t unless types.Decode reads data as plain.
func samePlain(t *testing.T, data []byte, plain *NetConf) {
	t.Helper()
	general := &NetConf{BrName: defaultBridge}
	if err := types.Decode(data, general); err != nil {
		t.Fatalf("plain path took what encoding/json refuses (%v): %s", err, data)
	}
	if !reflect.DeepEqual(plain, general) {
		t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, general)
	}
}

// FuzzPlainConfig: wherever the plain path answers, encoding/json answers
// the same.
func FuzzPlainConfig(f *testing.F) {
	for _, s := range runtimeConfigs {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"Bridge":"x","vlanTrunk":[{"id":5}],"icc":null,"args":{"cni":{"MAC":"x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		plain := &NetConf{BrName: defaultBridge}
		if plain.decodePlain(data) {
			samePlain(t, data, plain)
		}
	})
}
