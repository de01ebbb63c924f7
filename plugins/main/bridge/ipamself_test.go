package main

import (
	"io"
	"strings"
	"testing"

	"cnisuite/pkg/types"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// TestIPAMTypeSelfRefused: "ipam":{"type":"bridge"} made bridge delegate to
// itself without end on DEL, GC and STATUS (found by test/fuzz). ADD's
// loader refuses it; DEL's goes on without IPAM (ADD leased nothing through
// it), saying so on stderr, so that the teardown after the refused ADD
// succeeds.
func TestIPAMTypeSelfRefused(t *testing.T) {
	conf := []byte(`{"cniVersion":"1.1.0","name":"n","type":"bridge","bridge":"br0","ipam":{"type":"bridge"}}`)
	if _, err := bridgeconf.Load(conf, ""); err == nil || types.Code(err) != types.CodeInvalidConfig || !strings.Contains(err.Error(), `ipam.type "bridge"`) {
		t.Errorf("loadConf with ipam.type bridge = %v, want code 7 naming ipam.type", err)
	}
	var stderr strings.Builder
	c, err := loadDelConf(conf, &stderr)
	if err != nil || c.HasIPAM() || !strings.Contains(stderr.String(), `ipam.type "bridge"`) {
		t.Errorf("loadDelConf with ipam.type bridge = %+v, %v (stderr %q); want no IPAM, said on stderr", c, err, stderr.String())
	}
	other := []byte(`{"cniVersion":"1.1.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"10.1.0.0/24"}}`)
	if c, err := loadDelConf(other, io.Discard); err != nil || !c.HasIPAM() {
		t.Errorf("loadDelConf with ipam.type host-local = %v, want it kept", err)
	}
}
