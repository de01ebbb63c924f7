package hostlocal

import (
	"strings"
	"testing"
)

// TestRouteFieldsRefused: routes are copied into the result, so values
// the result schema or the spec's unsigned fields cannot hold are refused
// (found by test/fuzz: "mtu":-2147483648 came back in the result).
func TestRouteFieldsRefused(t *testing.T) {
	for _, tc := range []struct{ route, want string }{
		{`{"dst":"0.0.0.0/0","mtu":-2147483648}`, "ipam.routes[0].mtu -2147483648: must be 68-65535"},
		{`{"dst":"0.0.0.0/0","mtu":67}`, "ipam.routes[0].mtu 67: must be 68-65535"},
		{`{"dst":"0.0.0.0/0","mtu":65536}`, "ipam.routes[0].mtu 65536"},
		{`{"dst":"0.0.0.0/0","advmss":-1}`, "ipam.routes[0].advmss -1: must not be negative"},
		{`{"dst":"0.0.0.0/0","priority":-1}`, "ipam.routes[0].priority -1"},
		{`{"dst":"0.0.0.0/0","table":-1}`, "ipam.routes[0].table -1"},
		{`{"dst":"0.0.0.0/0","scope":256}`, "ipam.routes[0].scope 256: must be 0-255"},
	} {
		ipam := `"ranges":[[{"subnet":"10.1.2.0/24"}]],"routes":[` + tc.route + `]`
		out, code := run(t, call{cmd: "ADD", id: "c1", conf: conf("1.1.0", t.TempDir(), ipam)})
		if code == 0 {
			t.Errorf("ADD with route %s = success %s, want error %q", tc.route, out, tc.want)
			continue
		}
		if gotCode, msg := errorOf(t, out); gotCode != 7 || !strings.Contains(msg, tc.want) {
			t.Errorf("ADD with route %s = %d %q, want 7 containing %q", tc.route, gotCode, msg, tc.want)
		}
	}
}

// TestRouteFieldsAccepted: the edges of the valid values pass.
func TestRouteFieldsAccepted(t *testing.T) {
	ipam := `"ranges":[[{"subnet":"10.1.2.0/24"}]],"routes":[{"dst":"0.0.0.0/0","mtu":68,"advmss":1,"priority":0,"table":0,"scope":255},{"dst":"::/0","mtu":65535}]`
	if out, code := run(t, call{cmd: "ADD", id: "c1", conf: conf("1.1.0", t.TempDir(), ipam)}); code != 0 {
		t.Errorf("ADD = %d %s, want success", code, out)
	}
}
