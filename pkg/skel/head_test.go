package skel

import (
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
	"cnisuite/pkg/types"
)

func TestHeadKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(configHead{}), (&configHead{}).plainFields())
}

// FuzzHeadPlain: wherever the plain path reads the head, types.Decode
// reads the same; a configuration as runtimes send it takes the plain path.
func FuzzHeadPlain(f *testing.F) {
	typical := `{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"bridge","logFile":"/var/log/cni.log","logLevel":"debug","ipam":{"type":"host-local"}}`
	var h configHead
	if !h.decodePlain([]byte(typical)) || h.Name != "k8s-pod-network" || string(h.LogLevel) != `"debug"` {
		f.Fatalf("plain path on %s: %+v", typical, h)
	}
	f.Add([]byte(typical))
	f.Add([]byte(`{"name":"a","Name":"b","logFile":null,"logLevel":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain, general configHead
		if !plain.decodePlain(data) {
			return
		}
		if err := types.Decode(data, &general); err != nil {
			t.Fatalf("plain path took what types.Decode refuses (%v): %s", err, data)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("%s\nplain %+v\ngeneral %+v", data, plain, general)
		}
	})
}
