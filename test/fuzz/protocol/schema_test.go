package protocol

import (
	"strings"
	"testing"
)

func TestValidateResult(t *testing.T) {
	for _, tc := range []struct {
		name, out, want string
		bad             []string // substrings of the error; none: valid
	}{
		{"schema example", `{"cniVersion":"1.0.0","interfaces":[{"name":"cni0","mac":"0a:58:0a:f4:00:01","sandbox":""},{"name":"eth0","mac":"0a:58:0a:f4:00:03","sandbox":"/proc/1/ns/net","mtu":1500}],
			"ips":[{"address":"10.244.0.5/24","gateway":"10.244.0.1","interface":1}],"routes":[{"dst":"0.0.0.0/0","gw":"10.244.0.1","mtu":1400,"advmss":1360}],
			"dns":{"nameservers":["10.96.0.10"],"search":["a"],"options":["ndots:5"],"domain":"x"}}`, "1.0.0", nil},
		{"host-local result", `{"cniVersion":"1.1.0","ips":[{"address":"fd00::2/64","gateway":"fd00::1"}],"routes":[{"dst":"::/0"}],"dns":{}}`, "1.1.0", nil},
		{"0.3.1 version field", `{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.2/24"}]}`, "0.3.1", nil},
		{"0.2.0 shape", `{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1","routes":[{"dst":"0.0.0.0/0"}]},"dns":{}}`, "0.2.0", nil},
		{"missing version", `{"ips":[]}`, "1.0.0", []string{"$.cniVersion: required"}},
		{"other version", `{"cniVersion":"1.0.0"}`, "1.1.0", []string{`want the configuration's "1.1.0"`}},
		{"bad version", `{"cniVersion":"1.0"}`, "1.0", []string{"does not match"}},
		{"not an object", `[]`, "1.0.0", []string{"want an object"}},
		{"two values", `{} {}`, "1.0.0", []string{"not one JSON value"}},
		{"duplicate key", `{"cniVersion":"1.0.0","cniVersion":"1.0.0"}`, "1.0.0", []string{"given twice"}},
		{"bad mac", `{"cniVersion":"1.0.0","interfaces":[{"name":"e","mac":"udp"}]}`, "1.0.0", []string{".mac"}},
		{"no name", `{"cniVersion":"1.0.0","interfaces":[{}]}`, "1.0.0", []string{"interfaces[0].name: required"}},
		{"null interface", `{"cniVersion":"1.0.0","interfaces":[null]}`, "1.0.0", []string{"want an object"}},
		{"mtu range", `{"cniVersion":"1.0.0","interfaces":[{"name":"e","mtu":67}]}`, "1.0.0", []string{"out of range"}},
		{"mtu fraction", `{"cniVersion":"1.0.0","interfaces":[{"name":"e","mtu":1500.5}]}`, "1.0.0", []string{"want an integer"}},
		{"index past", `{"cniVersion":"1.0.0","interfaces":[{"name":"e"}],"ips":[{"address":"10.0.0.2/24","interface":1}]}`, "1.0.0", []string{"points past"}},
		{"negative index", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","interface":-1}]}`, "1.0.0", []string{"out of range"}},
		{"address not cidr", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2"}]}`, "1.0.0", []string{"spec:"}},
		{"route without dst", `{"cniVersion":"1.0.0","routes":[{"gw":"10.0.0.1"}]}`, "1.0.0", []string{"dst: required"}},
		{"advmss zero", `{"cniVersion":"1.0.0","routes":[{"dst":"0.0.0.0/0","advmss":0}]}`, "1.0.0", []string{"out of range"}},
		{"dns types", `{"cniVersion":"1.0.0","dns":{"nameservers":[1],"domain":[]}}`, "1.0.0", []string{"nameservers[0]", "domain"}},
		{"old shape family", `{"cniVersion":"0.2.0","ip4":{"ip":"fd00::2/64"}}`, "0.2.0", []string{"other family"}},
		{"ips in old shape", `{"cniVersion":"0.1.0","ips":[]}`, "0.1.0", []string{"below 0.3.0"}},
	} {
		err := ValidateResult([]byte(tc.out), tc.want)
		switch {
		case len(tc.bad) == 0 && err != nil:
			t.Errorf("%s: ValidateResult = %v, want valid", tc.name, err)
		case len(tc.bad) > 0 && err == nil:
			t.Errorf("%s: ValidateResult = nil, want %q", tc.name, tc.bad)
		case err != nil:
			for _, b := range tc.bad {
				if !strings.Contains(err.Error(), b) {
					t.Errorf("%s: ValidateResult = %v, want it to say %q", tc.name, err, b)
				}
			}
		}
	}
}

func TestCheckProtocol(t *testing.T) {
	errObj := `{"cniVersion":"1.1.0","code":7,"msg":"bad"}`
	for _, tc := range []struct {
		name string
		o    Outcome
		bad  string // substring of the first problem; "": none
	}{
		{"error object", Outcome{Verb: "DEL", Exit: 1, Stdout: []byte(errObj)}, ""},
		{"success, no output", Outcome{Verb: "DEL"}, ""},
		{"ADD result", Outcome{Verb: "ADD", Stdout: []byte(`{"cniVersion":"1.1.0"}`)}, ""},
		{"stack", Outcome{Verb: "ADD", Exit: 2, Stderr: []byte("panic: x\n\ngoroutine 1 [running]:")}, "a Go panic"},
		{"exit 2", Outcome{Verb: "ADD", Exit: 2, Stdout: []byte(errObj)}, "exit status 2"},
		{"no object", Outcome{Verb: "ADD", Exit: 1}, "exactly one JSON error object"},
		{"two objects", Outcome{Verb: "ADD", Exit: 1, Stdout: []byte(errObj + errObj)}, "exactly one"},
		{"string code", Outcome{Verb: "ADD", Exit: 1, Stdout: []byte(`{"cniVersion":"1.1.0","code":"7","msg":"m"}`)}, "code"},
		{"no version", Outcome{Verb: "ADD", Exit: 1, Stdout: []byte(`{"code":7,"msg":"m"}`)}, "cniVersion: required"},
		{"recovered", Outcome{Verb: "ADD", Exit: 1, Stdout: []byte(`{"cniVersion":"1.1.0","code":999,"msg":"internal error in plugin x: boom"}`)}, "recover"},
		{"timeout", Outcome{Verb: "ADD", Exit: -1, TimedOut: true}, "timed out"},
		{"DEL output", Outcome{Verb: "DEL", Stdout: []byte(`{}`)}, "printed"},
	} {
		got := CheckProtocol(tc.o, "1.1.0")
		switch {
		case tc.bad == "" && len(got) > 0:
			t.Errorf("%s: CheckProtocol = %q, want none", tc.name, got)
		case tc.bad != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "|"), tc.bad)):
			t.Errorf("%s: CheckProtocol = %q, want %q", tc.name, got, tc.bad)
		}
	}
}

func TestConfigVersion(t *testing.T) {
	for in, want := range map[string]string{
		`{"cniVersion":"1.0.0"}`:                      "1.0.0",
		`{"cniVersion":"1.0.0","cniVersion":"0.4.0"}`: "0.4.0",
		`{"CNIVERSION":"0.3.1"}`:                      "0.3.1",
		`{}`:                                          "0.1.0",
		`garbage`:                                     "0.1.0",
	} {
		if got := ConfigVersion([]byte(in)); got != want {
			t.Errorf("ConfigVersion(%s) = %q, want %q", in, got, want)
		}
	}
}
