package main

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/backup"
)

const confHead = `"cniVersion":"1.0.0","name":"net","type":"tuning"`

func TestLoad(t *testing.T) {
	tests := []struct {
		name, conf, cniArgs string
		check               func(t *testing.T, c *Config)
	}{
		{"defaults", `{` + confHead + `}`, "", func(t *testing.T, c *Config) {
			if c.DataDir != DefaultDataDir || c.MAC != "" || c.MTU != 0 || c.Promisc != nil || c.Allmulti != nil || c.TxQLen != nil {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{"mac from CNI_ARGS over config", `{` + confHead + `,"mac":"02:00:00:00:00:01"}`, "MAC=02:00:00:00:00:02",
			wantMAC("02:00:00:00:00:02")},
		{"runtimeConfig over CNI_ARGS", `{` + confHead + `,"runtimeConfig":{"mac":"02:00:00:00:00:03"}}`, "MAC=02:00:00:00:00:02",
			wantMAC("02:00:00:00:00:03")},
		{"args.cni over runtimeConfig", `{` + confHead + `,"runtimeConfig":{"mac":"02:00:00:00:00:03"},"args":{"cni":{"mac":"02:00:00:00:00:04"}}}`,
			"MAC=02:00:00:00:00:02", wantMAC("02:00:00:00:00:04")},
		{"args.cni overrides every attribute",
			`{` + confHead + `,"mtu":1400,"promisc":true,"allmulti":true,"txQLen":10,
			"args":{"cni":{"mtu":1300,"promisc":false,"allmulti":false,"txQLen":0}}}`, "",
			func(t *testing.T, c *Config) {
				if c.MTU != 1300 || *c.Promisc || *c.Allmulti || *c.TxQLen != 0 {
					t.Errorf("after args: mtu %d promisc %v allmulti %v txQLen %d", c.MTU, *c.Promisc, *c.Allmulti, *c.TxQLen)
				}
			}},
		{"args.cni.sysctl without config sysctl", `{` + confHead + `,"args":{"cni":{"sysctl":{"net.a":"1"}}}}`, "",
			wantSysctls(Sysctls{{"net.a", "1"}})},
		{"args.cni.sysctl merged over config sysctl",
			`{` + confHead + `,"sysctl":{"net.a":"1","net.b":"2"},"args":{"cni":{"sysctl":{"net.b":"3","net.c":"4"}}}}`, "",
			wantSysctls(Sysctls{{"net.a", "1"}, {"net.b", "3"}, {"net.c", "4"}})},
		{"unknown CNI_ARGS ignored on request", `{` + confHead + `}`, "IgnoreUnknown=1;FOO=bar", func(*testing.T, *Config) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.conf), tc.cniArgs)
			if err != nil {
				t.Fatalf("Load(%s, %q) = %v", tc.conf, tc.cniArgs, err)
			}
			tc.check(t, c)
		})
	}
}

func wantMAC(mac string) func(*testing.T, *Config) {
	return func(t *testing.T, c *Config) {
		if c.MAC != mac {
			t.Errorf("MAC = %q, want %q", c.MAC, mac)
		}
	}
}

func wantSysctls(want Sysctls) func(*testing.T, *Config) {
	return func(t *testing.T, c *Config) {
		if !reflect.DeepEqual(c.Sysctl, want) {
			t.Errorf("Sysctl = %v, want %v", c.Sysctl, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, conf, cniArgs string
		kind                error
		text                string
	}{
		{"mtu as string", `{` + confHead + `,"mtu":"1500"}`, "", types.ErrInvalidConfig, `mtu: got a JSON string, want an integer`},
		{"promisc as string", `{` + confHead + `,"promisc":"yes"}`, "", types.ErrInvalidConfig, `promisc: got a JSON string, want a boolean`},
		{"allmulti as number", `{` + confHead + `,"allmulti":1}`, "", types.ErrInvalidConfig, `allmulti: got a JSON number`},
		{"txQLen as string", `{` + confHead + `,"txQLen":"1000"}`, "", types.ErrInvalidConfig, `txQLen: got a JSON string`},
		{"mac as number", `{` + confHead + `,"mac":12}`, "", types.ErrInvalidConfig, `mac: got a JSON number, want a string`},
		{"args mtu as string", `{` + confHead + `,"args":{"cni":{"mtu":"9000"}}}`, "", types.ErrInvalidConfig, `mtu: got a JSON string`},
		{"sysctl value as number", `{` + confHead + `,"sysctl":{"net.core.somaxconn":1024}}`, "", types.ErrInvalidConfig,
			`"net.core.somaxconn": value 1024 is not a JSON string`},
		{"duplicate sysctl keys", `{` + confHead + `,"sysctl":{"net.a":"1","net.a":"2"}}`, "", types.ErrInvalidConfig,
			`duplicated sysctl keys are not allowed`},
		{"duplicate args.cni.sysctl keys", `{` + confHead + `,"args":{"cni":{"sysctl":{"net.a":"1","net.a":"2"}}}}`, "",
			types.ErrInvalidConfig, `"net.a" given twice`},
		{"sysctl as list", `{` + confHead + `,"sysctl":["net.a=1"]}`, "", types.ErrInvalidConfig, `got an array`},
		{"malformed JSON", `{` + confHead + `,`, "", types.ErrDecoding, `decoding tuning configuration`},
		{"unknown CNI_ARGS key", `{` + confHead + `}`, "FOO=bar", types.ErrUnsupportedField, `FOO`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.conf), tc.cniArgs)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Load(%s) = %v, want %v containing %q", tc.conf, err, tc.kind, tc.text)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, conf, ifName string
		texts              []string // empty: valid
	}{
		{"valid", `{` + confHead + `,"sysctl":{"net.ipv4.conf.IFNAME.rp_filter":"1"},"mac":"02:AA:bb:00:00:01","mtu":1400,"txQLen":0}`, "eth0", nil},
		{"ifname with slash", `{` + confHead + `}`, "a/b", []string{`CNI_IFNAME "a/b"`}},
		{"ifname dot-dot", `{` + confHead + `,"sysctl":{"net.ipv4.conf.IFNAME.rp_filter":"1"}}`, "..", []string{`CNI_IFNAME ".."`}},
		{"bad mac", `{` + confHead + `,"mac":"zz:00"}`, "eth0", []string{`mac "zz:00"`}},
		{"long mac", `{` + confHead + `,"mac":"00:00:00:00:fe:80:00:00"}`, "eth0", []string{`not a 6-byte`}},
		{"multicast mac", `{` + confHead + `,"mac":"01:00:5e:00:00:01"}`, "eth0", []string{`multicast`}},
		{"negative mtu", `{` + confHead + `,"mtu":-1}`, "eth0", []string{`mtu -1`}},
		{"negative txQLen", `{` + confHead + `,"txQLen":-5}`, "eth0", []string{`txQLen -5`}},
		{"relative dataDir", `{` + confHead + `,"dataDir":"state"}`, "eth0", []string{`dataDir "state"`}},
		{"sysctl outside net", `{` + confHead + `,"sysctl":{"kernel.pid_max":"1"}}`, "eth0", []string{`"kernel.pid_max"`}},
		{"sysctl escape", `{` + confHead + `,"sysctl":{"net/../kernel/pid_max":"1"}}`, "eth0", []string{`"net/../kernel/pid_max"`}},
		{"sysctl value with newline", `{` + confHead + `,"sysctl":{"net.a.b":"1\n2"}}`, "eth0", []string{`newline`}},
		{"every problem at once", `{` + confHead + `,"mtu":-1,"mac":"x","sysctl":{"kernel.x":"1"}}`, "eth0",
			[]string{`mtu -1`, `mac "x"`, `"kernel.x"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.conf), "")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			err = c.Validate(tc.ifName)
			if len(tc.texts) == 0 {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want nil", tc.ifName, err)
				}
				return
			}
			if err == nil || types.Code(err) != types.CodeInvalidConfig && types.Code(err) != types.CodeInvalidEnv {
				t.Fatalf("Validate(%q) = %v, want an invalid config or environment error", tc.ifName, err)
			}
			for _, text := range tc.texts {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("Validate(%q) = %q, want it to contain %q", tc.ifName, err, text)
				}
			}
		})
	}
}

func TestSettings(t *testing.T) {
	c, err := Load([]byte(`{`+confHead+`,"sysctl":{"net.ipv4.conf.IFNAME.rp_filter":"1","net/ipv6/conf/IFNAME/accept_ra":"0"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Settings("eth0.100")
	want := []backup.Setting{{Path: "net/ipv4/conf/eth0.100/rp_filter", Value: "1"}, {Path: "net/ipv6/conf/eth0.100/accept_ra", Value: "0"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Settings(eth0.100) = %v, %v; want %v", got, err, want)
	}
}

func TestResultFor(t *testing.T) {
	prev := &types.Result{CNIVersion: "1.0.0", Interfaces: []*types.Interface{
		{Name: "cni0", Mac: "aa:aa:aa:aa:aa:aa"},
		{Name: "eth0", Mac: "bb:bb:bb:bb:bb:bb"},
		{Name: "eth0", Mac: "cc:cc:cc:cc:cc:cc", Sandbox: "/var/run/netns/x"},
	}}
	c := &Config{MAC: "02:00:00:00:00:09", MTU: 1400}
	c.CNIVersion = "1.1.0"
	mac, _ := net.ParseMAC("02:00:00:00:00:09")
	got := resultFor(prev, "eth0", c, linkops.Attrs{MAC: mac, MTU: 1400})
	want := []types.Interface{
		{Name: "cni0", Mac: "aa:aa:aa:aa:aa:aa"},
		{Name: "eth0", Mac: "bb:bb:bb:bb:bb:bb"},
		{Name: "eth0", Mac: "02:00:00:00:00:09", Mtu: 1400, Sandbox: "/var/run/netns/x"},
	}
	for i, w := range want {
		if *got.Interfaces[i] != w {
			t.Errorf("interface %d = %+v, want %+v", i, *got.Interfaces[i], w)
		}
	}
	if prev.Interfaces[2].Mac != "cc:cc:cc:cc:cc:cc" {
		t.Errorf("resultFor modified prevResult")
	}
}
