package main

import (
	"io"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

// TestIPAMTypeSelfRefused: "ipam":{"type":"bridge"} made bridge delegate to
// itself without end on DEL, GC and STATUS (found by test/fuzz); every
// verb's configuration loader refuses it before anything is started.
func TestIPAMTypeSelfRefused(t *testing.T) {
	conf := []byte(`{"cniVersion":"1.1.0","name":"n","type":"bridge","bridge":"br0","ipam":{"type":"bridge"}}`)
	_, addErr := loadConf(conf, "")
	_, delErr := loadDelConf(conf, io.Discard)
	for name, err := range map[string]error{"loadConf": addErr, "loadDelConf": delErr} {
		if err == nil || types.Code(err) != types.CodeInvalidConfig || !strings.Contains(err.Error(), `ipam.type "bridge"`) {
			t.Errorf("%s with ipam.type bridge = %v, want code 7 naming ipam.type", name, err)
		}
	}
	other := []byte(`{"cniVersion":"1.1.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"10.1.0.0/24"}}`)
	if _, err := loadDelConf(other, io.Discard); err != nil {
		t.Errorf("loadDelConf with ipam.type host-local = %v, want nil", err)
	}
}
