package records

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRecordEncode: a record is written byte for byte as json.Marshal
// writes it, and refused where it refuses.
func FuzzRecordEncode(f *testing.F) {
	f.Add("bridge", "k8s", "abc123", "eth0", "/run/netns/x", "K8S_POD_NAME=a", []byte(`{"cniVersion":"1.0.0", "name":"k8s"}`), []byte(`{"ips":[]}`))
	f.Add("portmap", "n<&>", "\u2028", "\xff", "", "", []byte(`{"a":"<b> \u2028 &"}`), []byte(nil))
	f.Add("p", "n", "c", "i", "", "", []byte(nil), []byte(`{bad`))
	f.Fuzz(func(t *testing.T, plugin, network, id, ifName, netns, args string, config, result []byte) {
		r := Record{Plugin: plugin, Network: network, ContainerID: id, IfName: ifName, Netns: netns, Args: args,
			Config: config, Result: result, Binary: "/opt/cni/bin/" + plugin}
		got, gotErr := r.encode()
		want, wantErr := json.Marshal(r)
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("encode %s, %v\nMarshal %s, %v", got, gotErr, want, wantErr)
		}
	})
}
