package bridgeconf

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func TestLoadConf(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		cniArgs string
		check   func(t *testing.T, c *NetConf)
	}{
		{"defaults", `{"cniVersion":"1.0.0","name":"n","type":"bridge"}`, "", func(t *testing.T, c *NetConf) {
			if c.BrName != "cni0" || c.IsGW || c.HasIPAM() || c.Backend() != "" || c.mac != nil {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{"default gateway implies gateway", `{"cniVersion":"1.0.0","name":"n","isDefaultGateway":true}`, "", func(t *testing.T, c *NetConf) {
			if !c.IsGW {
				t.Errorf("isDefaultGateway did not set isGateway")
			}
		}},
		{"trunk sorted and deduplicated", `{"cniVersion":"1.0.0","name":"n","vlan":7,"vlanTrunk":[{"id":20},{"minID":5,"maxID":7},{"id":6}]}`, "", func(t *testing.T, c *NetConf) {
			if want := []int{5, 6, 7, 20}; !slices.Equal(c.trunkIDs, want) {
				t.Errorf("trunkIDs = %v, want %v", c.trunkIDs, want)
			}
		}},
		{"mac from CNI_ARGS", `{"cniVersion":"1.0.0","name":"n"}`, "IgnoreUnknown=1;MAC=0a:00:00:00:00:01", func(t *testing.T, c *NetConf) {
			wantMAC(t, c, "0a:00:00:00:00:01")
		}},
		{"args beats CNI_ARGS", `{"cniVersion":"1.0.0","name":"n","args":{"cni":{"mac":"0a:00:00:00:00:02"}}}`, "MAC=0a:00:00:00:00:01", func(t *testing.T, c *NetConf) {
			wantMAC(t, c, "0a:00:00:00:00:02")
		}},
		{"runtimeConfig beats args", `{"cniVersion":"1.0.0","name":"n","args":{"cni":{"mac":"0a:00:00:00:00:02"}},"runtimeConfig":{"mac":"0a:00:00:00:00:03"}}`, "MAC=0a:00:00:00:00:01", func(t *testing.T, c *NetConf) {
			wantMAC(t, c, "0a:00:00:00:00:03")
		}},
		{"every boolean key", `{"cniVersion":"1.0.0","name":"n","bridge":"br9","isGateway":true,"forceAddress":true,"ipMasq":true,"ipMasqBackend":"nftables","mtu":1400,"hairpinMode":true,"preserveDefaultVlan":true,"macspoofchk":true,"enabledad":true,"portIsolation":true,"ipam":{"type":"host-local"},"dns":{"nameservers":["10.0.0.53"]}}`, "", func(t *testing.T, c *NetConf) {
			if c.BrName != "br9" || !c.IsGW || !c.ForceAddress || !c.IPMasq || c.Backend() != "nftables" || c.MTU != 1400 ||
				!c.HairpinMode || !c.PreserveDefaultVlan || !c.MacSpoofChk || !c.EnableDad || !c.PortIsolation ||
				c.IPAM.Type != "host-local" || len(c.DNS.Nameservers) != 1 {
				t.Errorf("conf = %+v", c)
			}
		}},
		{"layer 2 at 0.3.0", `{"cniVersion":"0.3.0","name":"n","ipam":{},"disableContainerInterface":true,"promiscMode":true}`, "", func(t *testing.T, c *NetConf) {
			if c.HasIPAM() || !c.DisableContainerInterface || !c.PromiscMode {
				t.Errorf("conf = %+v", c)
			}
		}},
		{"icc and isolate absent", `{"cniVersion":"1.0.0","name":"n"}`, "", func(t *testing.T, c *NetConf) {
			if c.noICC || c.isolateMode != "" || c.Isolates() {
				t.Errorf("noICC = %v, isolateMode = %q, want false, \"\"", c.noICC, c.isolateMode)
			}
		}},
		{"icc true isolate false", `{"cniVersion":"1.0.0","name":"n","icc":true,"isolate":false}`, "", func(t *testing.T, c *NetConf) {
			if c.noICC || c.isolateMode != "" || c.Isolates() {
				t.Errorf("noICC = %v, isolateMode = %q, want false, \"\"", c.noICC, c.isolateMode)
			}
		}},
		{"icc false", `{"cniVersion":"1.0.0","name":"n","icc":false}`, "", func(t *testing.T, c *NetConf) {
			if !c.noICC || c.isolateMode != "" {
				t.Errorf("noICC = %v, isolateMode = %q, want true, \"\"", c.noICC, c.isolateMode)
			}
		}},
		{"isolate true", `{"cniVersion":"1.0.0","name":"n","isolate":true}`, "", func(t *testing.T, c *NetConf) {
			if c.noICC || c.isolateMode != "true" {
				t.Errorf("noICC = %v, isolateMode = %q, want false, \"true\"", c.noICC, c.isolateMode)
			}
		}},
		{"isolate strict", `{"cniVersion":"1.0.0","name":"n","isolate":"strict"}`, "", func(t *testing.T, c *NetConf) {
			if c.isolateMode != "strict" {
				t.Errorf("isolateMode = %q, want \"strict\"", c.isolateMode)
			}
		}},
		{"one range per family at 0.2.0", `{"cniVersion":"0.2.0","name":"n","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}`, "", func(*testing.T, *NetConf) {}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			c, err := Load([]byte(tt.conf), tt.cniArgs)
			if err != nil {
				t.Fatalf("Load(%s) = %v", tt.conf, err)
			}
			tt.check(t, c)
		})
	}
}

func wantMAC(t *testing.T, c *NetConf, want string) {
	t.Helper()
	if c.mac.String() != want {
		t.Errorf("mac = %v, want %s", c.mac, want)
	}
}

func TestLoadConfErrors(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		cniArgs string
		kind    error
		want    []string // substrings of the message: field and value
	}{
		{"bridge name too long", `{"cniVersion":"1.0.0","name":"n","bridge":"abcdefghijklmnop"}`, "", types.ErrInvalidConfig, []string{`bridge "abcdefghijklmnop"`}},
		{"bridge name with slash", `{"cniVersion":"1.0.0","name":"n","bridge":"a/b"}`, "", types.ErrInvalidConfig, []string{`bridge "a/b"`}},
		{"vlan too big", `{"cniVersion":"1.0.0","name":"n","vlan":4095}`, "", types.ErrInvalidConfig, []string{"vlan", "invalid VLAN ID 4095"}},
		{"vlan negative", `{"cniVersion":"1.0.0","name":"n","vlan":-1}`, "", types.ErrInvalidConfig, []string{"invalid VLAN ID -1"}},
		{"trunk id zero", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{"id":0}]}`, "", types.ErrInvalidConfig, []string{"vlanTrunk[0]", "incorrect trunk id parameter 0"}},
		{"trunk minID too big", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{"minID":5000,"maxID":5001}]}`, "", types.ErrInvalidConfig, []string{"incorrect trunk minID parameter 5000", "incorrect trunk maxID parameter 5001"}},
		{"trunk minID missing", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{"id":3},{"maxID":9}]}`, "", types.ErrInvalidConfig, []string{"vlanTrunk[1]", "minID is missing"}},
		{"trunk maxID missing", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{"minID":9}]}`, "", types.ErrInvalidConfig, []string{"maxID is missing"}},
		{"trunk reversed", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{"minID":9,"maxID":3}]}`, "", types.ErrInvalidConfig, []string{"minID is greater than maxID", "9 > 3"}},
		{"trunk empty entry", `{"cniVersion":"1.0.0","name":"n","vlanTrunk":[{}]}`, "", types.ErrInvalidConfig, []string{"vlanTrunk[0]", "needs id"}},
		{"vlan gateway name too long", `{"cniVersion":"1.0.0","name":"n","bridge":"abcdefghijkl","vlan":100,"isGateway":true,"ipam":{"type":"host-local"}}`, "", types.ErrInvalidConfig, []string{`"abcdefghijkl.100"`}},
		{"hairpin with promisc", `{"cniVersion":"1.0.0","name":"n","hairpinMode":true,"promiscMode":true}`, "", types.ErrInvalidConfig, []string{"cannot set hairpin mode and promiscuous mode at the same time"}},
		{"ipam with disabled interface", `{"cniVersion":"1.0.0","name":"n","disableContainerInterface":true,"ipam":{"type":"host-local"}}`, "", types.ErrInvalidConfig, []string{"disableContainerInterface", `"host-local"`}},
		{"mtu too small", `{"cniVersion":"1.0.0","name":"n","mtu":60}`, "", types.ErrInvalidConfig, []string{"mtu 60"}},
		{"mtu negative", `{"cniVersion":"1.0.0","name":"n","mtu":-5}`, "", types.ErrInvalidConfig, []string{"mtu -5"}},
		{"unknown backend", `{"cniVersion":"1.0.0","name":"n","ipMasqBackend":"ebtables"}`, "", types.ErrInvalidConfig, []string{`ipMasqBackend "ebtables"`}},
		{"bad CNI_ARGS MAC", `{"cniVersion":"1.0.0","name":"n"}`, "MAC=zz", types.ErrInvalidConfig, []string{`CNI_ARGS MAC "zz"`}},
		{"bad args mac", `{"cniVersion":"1.0.0","name":"n","args":{"cni":{"mac":"01:00:5e:00:00:01"}}}`, "", types.ErrInvalidConfig, []string{`args.cni.mac "01:00:5e:00:00:01"`, "multicast"}},
		{"bad runtimeConfig mac", `{"cniVersion":"1.0.0","name":"n","runtimeConfig":{"mac":"00:11"}}`, "", types.ErrInvalidConfig, []string{`runtimeConfig.mac "00:11"`}},
		{"unknown CNI_ARGS key", `{"cniVersion":"1.0.0","name":"n"}`, "FOO=1", types.ErrUnsupportedField, []string{"FOO"}},
		{"string for a bool", `{"cniVersion":"1.0.0","name":"n","portIsolation":"true"}`, "", types.ErrDecoding, []string{"portIsolation"}},
		{"layer 2 at 0.2.0", `{"cniVersion":"0.2.0","name":"n","ipam":{}}`, "", types.ErrIncompatibleVersion, []string{"layer 2", "0.2.0"}},
		{"two IPv4 ranges at 0.1.0", `{"cniVersion":"0.1.0","name":"n","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.2.0.0/24"}]]}}`, "", types.ErrIncompatibleVersion, []string{"2 IPv4 ranges", "0.1.0"}},
		{"several problems at once", `{"cniVersion":"1.0.0","name":"n","vlan":5000,"mtu":1}`, "", types.ErrInvalidConfig, []string{"invalid VLAN ID 5000", "mtu 1"}},
		{"icc as a string", `{"cniVersion":"1.0.0","name":"n","icc":"false"}`, "", types.ErrInvalidConfig, []string{`icc "false"`, "true or false"}},
		{"icc null", `{"cniVersion":"1.0.0","name":"n","icc":null}`, "", types.ErrInvalidConfig, []string{"icc null"}},
		{"icc as a number", `{"cniVersion":"1.0.0","name":"n","icc":0}`, "", types.ErrInvalidConfig, []string{"icc 0"}},
		{"isolate unknown word", `{"cniVersion":"1.0.0","name":"n","isolate":"loose"}`, "", types.ErrInvalidConfig, []string{`isolate "loose"`, `"strict"`}},
		{"isolate as a string true", `{"cniVersion":"1.0.0","name":"n","isolate":"true"}`, "", types.ErrInvalidConfig, []string{`isolate "true"`}},
		{"isolate strict in capitals", `{"cniVersion":"1.0.0","name":"n","isolate":"STRICT"}`, "", types.ErrInvalidConfig, []string{`isolate "STRICT"`}},
		{"isolate null", `{"cniVersion":"1.0.0","name":"n","isolate":null}`, "", types.ErrInvalidConfig, []string{"isolate null"}},
		{"isolate object", `{"cniVersion":"1.0.0","name":"n","isolate":{}}`, "", types.ErrInvalidConfig, []string{"isolate {}"}},
		{"icc and isolate both wrong with mtu", `{"cniVersion":"1.0.0","name":"n","icc":"no","isolate":1,"mtu":1}`, "", types.ErrInvalidConfig, []string{`icc "no"`, "isolate 1", "mtu 1"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			_, err := Load([]byte(tt.conf), tt.cniArgs)
			if err == nil {
				t.Fatalf("Load(%s) = nil error, want %v", tt.conf, tt.kind)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("Load(%s) = %v, want kind %v", tt.conf, err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%s) = %q, want it to mention %q", tt.conf, err, w)
				}
			}
		})
	}
}

func TestHostVethName(t *testing.T) {
	name := func(network, id, ifname, prefix, asked string) string {
		c := &NetConf{}
		c.Name, c.HostVethPrefix, c.Args.Cni.HostVethName = network, prefix, asked
		n, exact := c.HostVethName(id, ifname)
		if exact != (asked != "") {
			t.Errorf("hostVethName(asked %q) exact = %v", asked, exact)
		}
		return n
	}
	a := name("net", "ctr1", "eth0", "", "")
	if len(a) != 12 || !strings.HasPrefix(a, "veth") {
		t.Errorf("hostVethName = %q, want veth + 8 hex digits", a)
	}
	if a != name("net", "ctr1", "eth0", "", "") {
		t.Errorf("hostVethName is not stable")
	}
	if a == name("net", "ctr1", "eth1", "", "") || a == name("net2", "ctr1", "eth0", "", "") {
		t.Errorf("hostVethName does not depend on every part of the owner")
	}
	if p := name("net", "ctr1", "eth0", "pod", ""); p != "pod"+a[4:] {
		t.Errorf("with hostVethPrefix pod: %q, want pod + the same 8 hex digits as %q", p, a)
	}
	if n := name("net", "ctr1", "eth0", "pod", "web0"); n != "web0" {
		t.Errorf("with args.cni.hostVethName web0: %q", n)
	}
}
