package main

import (
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
	"cnisuite/pkg/types"
)

// runtimeConfigs are portmap configurations as libcni, containerd and
// CRI-O pass them.
var runtimeConfigs = []string{
	`{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"portmap","capabilities":{"portMappings":true},"snat":true,"runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"127.0.0.1"}]},"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/a"}],"ips":[{"interface":0,"address":"10.244.1.5/24","gateway":"10.244.1.1"}]}}`,
	`{"cniVersion":"1.1.0","name":"podman","type":"portmap","backend":"nftables","masqAll":false,"markMasqBit":13,"conditionsV4":["-s","10.0.0.0/8"],"conditionsV6":[],"runtimeConfig":{"portMappings":[{"hostPort":8000,"containerPort":80,"protocol":"tcp","range":3,"flavour":"x"}]}}`,
	`{"cniVersion":"0.4.0","name":"n","type":"portmap","externalSetMarkChain":"KUBE-MARK-MASQ","runtimeConfig":{"portMappings":[]}}`,
}

func TestPlainConfigKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(Config{}), (&Config{}).plainFields(), types.NetConfKeys())
	scantest.SameFields(t, reflect.TypeOf(PortMapEntry{}), (&PortMapEntry{}).plainFields())
	scantest.SameKeys(t, reflect.TypeOf(PortMapEntry{}), mappingKeys)
}

// TestRuntimeConfigsArePlain: what runtimes send takes the plain path and
// decodes as encoding/json decodes it; its unknown mapping keys too.
func TestRuntimeConfigsArePlain(t *testing.T) {
	for _, s := range runtimeConfigs {
		var plain Config
		if !plain.decodePlain([]byte(s)) {
			t.Fatalf("plain path refused %s", s)
		}
		keys, ok := unknownKeysPlain([]byte(s))
		if !ok {
			t.Fatalf("plain path refused the mappings of %s", s)
		}
		sameConfig(t, []byte(s), plain)
		sameUnknown(t, []byte(s), keys)
	}
}

// sameConfig fails t unless encoding/json reads data as plain.
func sameConfig(t *testing.T, data []byte, plain Config) {
	t.Helper()
	var general Config
	if err := types.Decode(data, &general); err != nil {
		t.Fatalf("plain path took what encoding/json refuses (%v): %s", err, data)
	}
	if !reflect.DeepEqual(plain, general) {
		t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, general)
	}
}

// sameUnknown fails t unless the general path finds keys as the unknown
// mapping keys of data.
func sameUnknown(t *testing.T, data []byte, keys []string) {
	t.Helper()
	want := unknownKeysGeneral(data)
	if len(keys) != len(want) || len(want) > 0 && !reflect.DeepEqual(keys, want) {
		t.Fatalf("%s: plain unknown keys %q, general %q", data, keys, want)
	}
}

// FuzzPlainConfig: wherever the plain path answers, encoding/json answers
// the same.
func FuzzPlainConfig(f *testing.F) {
	for _, s := range runtimeConfigs {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"runtimeConfig":{"portMappings":[null,{"HostPort":1,"x":2,"x":3}]},"SNAT":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain Config
		if plain.decodePlain(data) {
			sameConfig(t, data, plain)
		}
		if keys, ok := unknownKeysPlain(data); ok {
			sameUnknown(t, data, keys)
		}
	})
}
