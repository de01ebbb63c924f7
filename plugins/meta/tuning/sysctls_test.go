package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func TestSysctlPath(t *testing.T) {
	tests := []struct {
		name, key, ifName string
		want              string // "" means an invalid-config error
	}{
		{"dotted key", "net.ipv4.ip_forward", "eth0", "net/ipv4/ip_forward"},
		{"slash key", "net/ipv4/ip_forward", "eth0", "net/ipv4/ip_forward"},
		{"leading slash", "/net/core/somaxconn", "eth0", "net/core/somaxconn"},
		{"IFNAME substituted", "net.ipv4.conf.IFNAME.rp_filter", "eth0", "net/ipv4/conf/eth0/rp_filter"},
		{"IFNAME with a dotted interface name", "net.ipv4.conf.IFNAME.rp_filter", "eth0.100", "net/ipv4/conf/eth0.100/rp_filter"},
		{"slash key keeps dots in names", "net/ipv4/conf/eth0.100/rp_filter", "eth1", "net/ipv4/conf/eth0.100/rp_filter"},
		{"IFNAME in slash key", "net/ipv6/conf/IFNAME/accept_ra", "veth.1", "net/ipv6/conf/veth.1/accept_ra"},
		{"IFNAME only as a whole component", "net.ipv4.conf.IFNAMEX.rp_filter", "eth0", "net/ipv4/conf/IFNAMEX/rp_filter"},
		{"dot-dot escape", "net/../kernel/core_pattern", "eth0", ""},
		{"dot-dot deep escape", "net/ipv4/../../kernel/pid_max", "eth0", ""},
		{"dot component", "net/./ipv4/ip_forward", "eth0", ""},
		{"escape through ifname", "net.ipv4.conf.IFNAME.rp_filter", "..", ""},
		{"slash in ifname", "net.ipv4.conf.IFNAME.rp_filter", "a/b", ""},
		{"outside net", "kernel.pid_max", "eth0", ""},
		{"net prefix of another name", "netfilter.x", "eth0", ""},
		{"net alone", "net", "eth0", ""},
		{"empty component", "net..ipv4", "eth0", ""},
		{"empty key", "", "eth0", ""},
		{"NUL byte", "net.ipv4.ip_forward\x00", "eth0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SysctlPath(tc.key, tc.ifName)
			if tc.want == "" {
				if !errors.Is(err, types.ErrInvalidConfig) {
					t.Fatalf("SysctlPath(%q, %q) = %q, %v; want an invalid-config error", tc.key, tc.ifName, got, err)
				}
				if !strings.Contains(err.Error(), strconv.Quote(tc.key)) {
					t.Errorf("error %q does not name the key %q", err, tc.key)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("SysctlPath(%q, %q) = %q, %v; want %q", tc.key, tc.ifName, got, err, tc.want)
			}
		})
	}
}

// fakeProcSys builds a tree like /proc/sys with a symlink leaving net/
// and one staying inside it.
func fakeProcSys(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mustWrite := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("net/ipv4/conf/eth0/rp_filter", "1\n")
	mustWrite("kernel/core_pattern", "core\n")
	if err := os.Symlink("../kernel", filepath.Join(root, "net/evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("eth0", filepath.Join(root, "net/ipv4/conf/alias")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestSysctlsDecode(t *testing.T) {
	tests := []struct {
		name, in string
		want     Sysctls
		errText  string // non-empty: an invalid-config error containing it
	}{
		{"keeps order", `{"net.b":"1","net.a":"2"}`, Sysctls{{"net.b", "1"}, {"net.a", "2"}}, ""},
		{"empty object", `{}`, Sysctls{}, ""},
		{"null", `null`, nil, ""},
		{"duplicate key", `{"net.a":"1","net.a":"2"}`, nil, `"net.a" given twice`},
		{"number value", `{"net.a":1}`, nil, `"net.a": value 1 is not a JSON string`},
		{"boolean value", `{"net.a":true}`, nil, `value true is not a JSON string`},
		{"null value", `{"net.a":null}`, nil, `value null is not a JSON string`},
		{"object value", `{"net.a":{"x":"1"}}`, nil, `is not a JSON string`},
		{"array instead of object", `["net.a"]`, nil, `want a JSON object of strings, got an array`},
		{"string instead of object", `"net.a=1"`, nil, `got a string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Sysctls
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.errText != "" {
				if !errors.Is(err, types.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("decoding %s: error %v, want invalid config containing %q", tc.in, err, tc.errText)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoding %s = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestSysctlsMarshalRoundTrip(t *testing.T) {
	in := Sysctls{{"net.b", "1 2"}, {"net/a", `"q"`}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Sysctls
	if err := json.Unmarshal(data, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip of %v through %s = %v, %v", in, data, out, err)
	}
}

func writeAllowList(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allowlist.conf")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAllowList(t *testing.T) {
	list := []string{
		"# interface keys only",
		"",
		`net\.ipv4\.conf\.IFNAME\.rp_filter`,
		`  net\.ipv6\.conf\.IFNAME\.accept_ra  `,
		`somaxconn`,
		`net.ipv4.conf.IFNAME.arp_[a-z]+`,
	}
	al, err := LoadAllowList(writeAllowList(t, list...))
	if err != nil {
		t.Fatalf("LoadAllowList: %v", err)
	}
	tests := []struct {
		key  string
		want bool
	}{
		{"net.ipv4.conf.IFNAME.rp_filter", true},
		{"net.ipv6.conf.IFNAME.accept_ra", true},
		{"net/ipv4/conf/IFNAME/rp_filter", true},
		{"net.ipv4.conf.IFNAME.arp_ignore", true},
		// The reference matches substrings: each of these slips through it.
		{"net.core.somaxconn", false},
		{"net.ipv4.conf.IFNAME.rp_filter_x", false},
		{"x.net.ipv4.conf.IFNAME.rp_filter", false},
		{"net.ipv4.conf.all.rp_filter", false},
		{"net.ipv4.conf.IFNAME.arp_ignore.x", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if got := al.Allows(tc.key); got != tc.want {
				t.Errorf("Allows(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

func TestAllowListCheck(t *testing.T) {
	t.Run("missing file allows every key", func(t *testing.T) {
		al, err := LoadAllowList(filepath.Join(t.TempDir(), "none.conf"))
		if err != nil || al != nil {
			t.Fatalf("LoadAllowList(missing) = %v, %v; want nil, nil", al, err)
		}
		if err := al.Check(Sysctls{{"net.core.somaxconn", "1"}}); err != nil {
			t.Errorf("Check with no list = %v, want nil", err)
		}
	})
	t.Run("refused keys are all named", func(t *testing.T) {
		al, err := LoadAllowList(writeAllowList(t, `net\.ipv4\.conf\.IFNAME\.rp_filter`))
		if err != nil {
			t.Fatal(err)
		}
		err = al.Check(Sysctls{{"net.core.somaxconn", "1"}, {"net.ipv4.conf.IFNAME.rp_filter", "1"}, {"net.ipv4.ip_forward", "1"}})
		if !errors.Is(err, types.ErrInvalidConfig) {
			t.Fatalf("Check = %v, want invalid config", err)
		}
		for _, key := range []string{"net.core.somaxconn", "net.ipv4.ip_forward"} {
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name %q", err, key)
			}
		}
	})
	t.Run("bad expression", func(t *testing.T) {
		_, err := LoadAllowList(writeAllowList(t, `net\.ipv4\.(`))
		if !errors.Is(err, types.ErrInvalidConfig) || !strings.Contains(err.Error(), "line 1") {
			t.Fatalf("LoadAllowList(bad regexp) = %v, want invalid config naming line 1", err)
		}
	})
}
