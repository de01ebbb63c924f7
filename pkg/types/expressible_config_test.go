package types

import (
	"strings"
	"testing"
)

func TestConfigExpressible(t *testing.T) {
	tests := []struct {
		name, version string
		hasIPAM       bool
		ipam          string
		want          string // "" = accepted
	}{
		{"new version, layer 2", "0.3.1", false, ``, ""},
		{"one range per family", "0.2.0", true, `{"ranges":[[{"subnet":"10.0.0.0/24"}],[{"subnet":"fd00::/64"}]]}`, ""},
		{"old subnet key", "0.1.0", true, `{"subnet":"10.0.0.0/24"}`, ""},
		{"layer 2 at 0.2.0", "0.2.0", false, ``, "layer 2 mode (no ipam.type) gives no IP address"},
		{"two IPv4 ranges", "0.2.0", true, `{"ranges":[[{"subnet":"10.0.0.0/24"}],[{"subnet":"10.1.0.0/24"}]]}`, "2 IPv4 ranges give 2 addresses"},
		{"unknown shape", "0.2.0", true, `{"ranges":"x"}`, ""},
		{"unsupported version", "9.9.9", false, ``, ""},
	}
	for _, tt := range tests {
		err := ConfigExpressible(tt.version, tt.hasIPAM, []byte(tt.ipam))
		if (err == nil) != (tt.want == "") || (err != nil && (!strings.Contains(err.Error(), tt.want) || Code(err) != CodeIncompatibleVersion)) {
			t.Errorf("ConfigExpressible/%s = %v, want %q (code 1)", tt.name, err, tt.want)
		}
	}
}
