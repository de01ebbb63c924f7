package types

import (
	"strings"
	"testing"
)

// Results as a buggy chained plugin or delegate can print them: every one
// is a decoding error (code 6) naming the JSON path at fault, never a panic.
func TestPrevResultShapesAreRefusedWithTheirPath(t *testing.T) {
	cases := []struct {
		name, conf, want string
	}{
		{"null interface", `{"cniVersion":"1.0.0","prevResult":{"interfaces":[null]}}`, "prevResult.interfaces[0]: null"},
		{"null ip after a good one", `{"cniVersion":"1.1.0","prevResult":{"ips":[{"address":"10.0.0.2/24"},null]}}`, "prevResult.ips[1]: null"},
		{"null route", `{"cniVersion":"1.0.0","prevResult":{"routes":[null]}}`, "prevResult.routes[0]: null"},
		{"null route at 0.4.0", `{"cniVersion":"0.4.0","prevResult":{"routes":[null]}}`, "prevResult.routes[0]: null"},
		{"null interface at 0.3.1", `{"cniVersion":"0.3.1","prevResult":{"interfaces":[null]}}`, "prevResult.interfaces[0]: null"},
		{"null ip at 0.4.0", `{"cniVersion":"0.4.0","prevResult":{"ips":[null]}}`, "prevResult.ips[0]: null"},
		{"null route in ip4 at 0.2.0", `{"cniVersion":"0.2.0","prevResult":{"ip4":{"ip":"10.0.0.2/24","routes":[null]}}}`, "prevResult.ip4.routes[0]: null"},
		{"number for prevResult", `{"cniVersion":"1.0.0","prevResult":5}`, "prevResult: a JSON number where an object was expected"},
		{"list for prevResult", `{"cniVersion":"1.0.0","prevResult":[]}`, "prevResult: a JSON array where an object was expected"},
		{"number for an address", `{"cniVersion":"1.0.0","prevResult":{"ips":[{"address":5}]}}`, "prevResult.ips.address: a JSON number where a string was expected"},
		{"string for interfaces", `{"cniVersion":"1.0.0","prevResult":{"interfaces":"eth0"}}`, "prevResult.interfaces: a JSON string where a list was expected"},
		{"interface index out of range", `{"cniVersion":"1.0.0","prevResult":{"interfaces":[{"name":"a"}],"ips":[{"address":"10.0.0.2/24","interface":1}]}}`, "prevResult.ips[0].interface: index 1 is out of range"},
		{"negative interface index", `{"cniVersion":"1.0.0","prevResult":{"ips":[{"address":"10.0.0.2/24","interface":-1}]}}`, "prevResult.ips[0].interface: index -1"},
		{"ip without address", `{"cniVersion":"1.0.0","prevResult":{"ips":[{}]}}`, "prevResult.ips[0]: address missing"},
		{"route without dst", `{"cniVersion":"1.0.0","prevResult":{"routes":[{}]}}`, "prevResult.routes[0]: dst missing"},
		{"mac that is no MAC", `{"cniVersion":"1.0.0","prevResult":{"interfaces":[{},{"mac":"cni0"}]}}`, `prevResult.interfaces[1].mac "cni0"`},
		{"interface mtu too large", `{"cniVersion":"1.1.0","prevResult":{"interfaces":[{"name":"e","mtu":2147483648}]}}`, "prevResult.interfaces[0].mtu 2147483648: must be 68-65535"},
		{"route mtu too small", `{"cniVersion":"1.1.0","prevResult":{"routes":[{"dst":"0.0.0.0/0","mtu":10}]}}`, "prevResult.routes[0].mtu 10"},
		{"negative advmss", `{"cniVersion":"1.1.0","prevResult":{"routes":[{"dst":"0.0.0.0/0","advmss":-1}]}}`, "prevResult.routes[0].advmss -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c NetConf
			err := Decode([]byte(tc.conf), &c)
			if err == nil {
				_, err = c.PrevResult()
			}
			if err == nil || Code(err) != CodeDecoding || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PrevResult(%s) = %v (code %d), want code 6 naming %q", tc.conf, err, Code(err), tc.want)
			}
		})
	}
}

type decodeProbe struct {
	NetConf
	RuntimeConfig struct {
		PortMappings []*struct {
			HostPort int `json:"hostPort"`
		} `json:"portMappings"`
		Named map[string]*struct{} `json:"named"`
	} `json:"runtimeConfig"`
	Args struct {
		CNI struct {
			IPs []string `json:"ips"`
		} `json:"cni"`
	} `json:"args"`
}

// The same rules hold for a plugin's own configuration decoded by Decode,
// including embedded NetConf keys and nested capability arguments.
func TestDecodeConfigShapes(t *testing.T) {
	cases := []struct{ conf, want string }{
		{`{"runtimeConfig":{"portMappings":[null]}}`, "runtimeConfig.portMappings[0]: null where an object was expected"},
		{`{"runtimeConfig":{"portMappings":[{"hostPort":"80"}]}}`, "runtimeConfig.portMappings.hostPort: a JSON string where an integer was expected"},
		{`{"runtimeConfig":{"named":{"a":null}}}`, "runtimeConfig.named.a: null"},
		{`{"args":{"cni":{"ips":[1]}}}`, "args.cni.ips: a JSON number where a string was expected"},
		{`{"name":["n"]}`, "name: a JSON array where a string was expected"},
		{`{"cni.dev/valid-attachments":{"containerID":"a"}}`, "cni.dev/valid-attachments: a JSON object where a list was expected"},
		{`{"name":"n",}`, "document: invalid JSON at byte"},
	}
	for _, tc := range cases {
		var p decodeProbe
		err := Decode([]byte(tc.conf), &p)
		if err == nil || Code(err) != CodeDecoding || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v (code %d), want code 6 naming %q", tc.conf, err, Code(err), tc.want)
		}
	}
	var p decodeProbe
	if err := Decode([]byte(`{"runtimeConfig":{"portMappings":[]},"args":{"cni":{"ips":[null]}}}`), &p); err != nil {
		t.Errorf("a null string in a list of strings reads as empty, as before: %v", err)
	}
}
