package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
	"cnisuite/pkg/types"
)

// runtimeConfigs are tuning configurations as libcni, containerd and CRI-O
// pass them.
var runtimeConfigs = []string{
	`{"cniVersion":"1.0.0","name":"pnet","type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1","net.ipv4.conf.IFNAME.rp_filter":"2"},"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/a"}],"ips":[{"interface":0,"address":"10.77.0.5/16"}]}}`,
	`{"cniVersion":"1.1.0","name":"podman","type":"tuning","mac":"0a:58:0a:58:00:05","mtu":1400,"promisc":true,"allmulti":false,"txQLen":2000,"dataDir":"/run/t","runtimeConfig":{"mac":"0a:58:0a:58:00:06"},"capabilities":{"mac":true},"dns":{"nameservers":["10.0.0.10"]},"ipam":{"type":"x","more":[1]}}`,
	`{"cniVersion":"0.4.0","name":"n","type":"tuning"}`,
}

func TestPlainConfigKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(Config{}), (&Config{}).plainFields(), types.NetConfKeys())
}

// TestRuntimeConfigsArePlain: what runtimes send takes the plain path and
// decodes as encoding/json decodes it.
func TestRuntimeConfigsArePlain(t *testing.T) {
	for _, s := range runtimeConfigs {
		var plain, general Config
		if !plain.decodePlain([]byte(s)) {
			t.Fatalf("plain path refused %s", s)
		}
		if err := json.Unmarshal([]byte(s), &general); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("%s\nplain %+v\ngeneral %+v", s, plain, general)
		}
	}
}

// FuzzPlainConfig: wherever the plain path answers, encoding/json answers
// the same.
func FuzzPlainConfig(f *testing.F) {
	for _, s := range runtimeConfigs {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"sysctl":{"a":"1","a":"2"},"Mac":"x","features":{"tso":false}}`))
	f.Add([]byte(`{"sysctl":{},"promisc":null,"capabilities":{"mac":true,"mac":false}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain, general Config
		if !plain.decodePlain(data) {
			return
		}
		if err := json.Unmarshal(data, &general); err != nil {
			t.Fatalf("plain path took what encoding/json refuses (%v): %s", err, data)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, general)
		}
	})
}
