package hostlocal

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dualStack = `"ranges":[[{"subnet":"10.1.2.0/24"}],[{"subnet":"2001:db8::/64"}]]`

func TestAddResultEveryVersion(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("# comment\nnameserver 10.0.0.53\nsearch a.example b.example\ndomain example\noptions ndots:2\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	routes := `"routes":[{"dst":"0.0.0.0/0"},{"dst":"192.168.0.0/16","gw":"10.1.2.254","mtu":1400}]`
	tests := []struct {
		version string
		ipam    string
		want    string // the result, compacted
	}{
		{"0.1.0", `"subnet":"10.1.2.0/24",` + routes, `{"cniVersion":"0.1.0","ip4":{"ip":"10.1.2.2/24","gateway":"10.1.2.1","routes":[{"dst":"0.0.0.0/0"},{"dst":"192.168.0.0/16","gw":"10.1.2.254"}]},"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
		{"0.2.0", `"ranges":[[{"subnet":"10.1.2.0/24"}],[{"subnet":"2001:db8::/64"}]]`, `{"cniVersion":"0.2.0","ip4":{"ip":"10.1.2.2/24","gateway":"10.1.2.1"},"ip6":{"ip":"2001:db8::2/64","gateway":"2001:db8::1"},"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
		{"0.3.1", dualStack, `{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.1.2.2/24","gateway":"10.1.2.1"},{"version":"6","address":"2001:db8::2/64","gateway":"2001:db8::1"}],"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
		{"0.4.0", dualStack, `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.2/24","gateway":"10.1.2.1"},{"version":"6","address":"2001:db8::2/64","gateway":"2001:db8::1"}],"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
		{"1.0.0", dualStack + "," + routes, `{"cniVersion":"1.0.0","ips":[{"address":"10.1.2.2/24","gateway":"10.1.2.1"},{"address":"2001:db8::2/64","gateway":"2001:db8::1"}],"routes":[{"dst":"0.0.0.0/0"},{"dst":"192.168.0.0/16","gw":"10.1.2.254","mtu":1400}],"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
		{"1.1.0", dualStack, `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.2/24","gateway":"10.1.2.1"},{"address":"2001:db8::2/64","gateway":"2001:db8::1"}],"dns":{"nameservers":["10.0.0.53"],"domain":"example","search":["a.example","b.example"],"options":["ndots:2"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			out := mustRun(t, call{cmd: "ADD", id: "c1", conf: conf(tt.version, t.TempDir(), tt.ipam+`,"resolvConf":"`+resolv+`"`)})
			if got := canonicalJSON(t, out); got != canonicalJSON(t, tt.want) {
				t.Errorf("ADD at %s =\n%s\nwant\n%s", tt.version, got, canonicalJSON(t, tt.want))
			}
			if strings.Contains(out, "interface") {
				t.Errorf("an IPAM result names interfaces: %s", out)
			}
		})
	}
}

func canonicalJSON(t testing.TB, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestRequestedAddresses(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		args  string
		want  string
		code  uint
		err   string
	}{
		{name: "capability_ips", extra: []string{`"runtimeConfig":{"ips":["10.1.2.50/24","2001:db8::50"]}`}, want: "10.1.2.50/24 2001:db8::50/64"},
		{name: "args_cni_ips", extra: []string{`"args":{"cni":{"ips":["10.1.2.51"]}}`}, want: "10.1.2.51/24 2001:db8::2/64"},
		{name: "cni_args_ip", args: "IP=10.1.2.52", want: "10.1.2.52/24 2001:db8::2/64"},
		{name: "cni_args_ip_with_prefix", args: "IP=10.1.2.52/24;IgnoreUnknown=1;K8S_POD_NAME=x", want: "10.1.2.52/24 2001:db8::2/64"},
		{name: "cni_args_ip_ignored_when_args_cni_ips", extra: []string{`"args":{"cni":{"ips":["2001:db8::53"]}}`}, args: "IP=10.1.2.52",
			want: "10.1.2.2/24 2001:db8::53/64"},
		{name: "sources_combine", extra: []string{`"args":{"cni":{"ips":["10.1.2.54"]}}`, `"runtimeConfig":{"ips":["2001:db8::54"]}`},
			want: "10.1.2.54/24 2001:db8::54/64"},
		{name: "same_address_twice_counts_once", extra: []string{`"args":{"cni":{"ips":["10.1.2.55"]}}`, `"runtimeConfig":{"ips":["10.1.2.55/24"]}`},
			want: "10.1.2.55/24 2001:db8::2/64"},
		{name: "gateway_refused", extra: []string{`"runtimeConfig":{"ips":["10.1.2.1"]}`}, code: 7, err: "requested address 10.1.2.1 is the gateway"},
		{name: "outside_every_set_refused", extra: []string{`"runtimeConfig":{"ips":["10.9.9.9"]}`}, code: 7, err: "requested address 10.9.9.9 is outside every range set"},
		{name: "taken_refused", extra: []string{`"runtimeConfig":{"ips":["10.1.2.7"]}`}, code: 11, err: "requested address 10.1.2.7 is already leased"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			seed(t, dataDir, map[string]string{"10.1.2.7": "other\r\neth0"})
			out, code := run(t, call{cmd: "ADD", id: "c1", args: tt.args, conf: conf("1.0.0", dataDir, dualStack, tt.extra...)})
			if tt.err != "" {
				if gotCode, msg := errorOf(t, out); gotCode != tt.code || !strings.Contains(msg, tt.err) {
					t.Fatalf("ADD = %d %q, want %d %q", gotCode, msg, tt.code, tt.err)
				}
				if f := files(t, dataDir); f != `10.1.2.7=other\r\neth0 lock=` {
					t.Errorf("a refused ADD changed the lease directory: %s", f)
				}
				return
			}
			if code != 0 {
				t.Fatalf("ADD = exit %d: %s", code, out)
			}
			if got := strings.Join(ipsOf(t, out), " "); got != tt.want {
				t.Errorf("ADD = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRangeSetOrder(t *testing.T) {
	// ipRanges are prepended to the old-style range, which is prepended to ranges.
	dataDir := t.TempDir()
	ipam := `"subnet":"10.2.0.0/24","ranges":[[{"subnet":"10.3.0.0/24"}]]`
	out := mustRun(t, call{cmd: "ADD", id: "c1", conf: conf("1.0.0", dataDir, ipam, `"runtimeConfig":{"ipRanges":[[{"subnet":"10.1.0.0/24"}]]}`)})
	if got := strings.Join(ipsOf(t, out), " "); got != "10.1.0.2/24 10.2.0.2/24 10.3.0.2/24" {
		t.Errorf("ADD = %s, want one address from ipRanges, the old-style subnet and ranges, in that order", got)
	}
	if got := files(t, dataDir); !strings.Contains(got, "last_reserved_ip.0=10.1.0.2 last_reserved_ip.1=10.2.0.2 last_reserved_ip.2=10.3.0.2") {
		t.Errorf("lease dir = %s", got)
	}
}

func TestDuplicateAdd(t *testing.T) {
	dataDir := t.TempDir()
	c := conf("1.0.0", dataDir, dualStack)
	mustRun(t, call{cmd: "ADD", id: "c1", conf: c})
	before := files(t, dataDir)
	out, code := run(t, call{cmd: "ADD", id: "c1", conf: c})
	if code == 0 {
		t.Fatalf("second ADD = success %s, want a refusal", out)
	}
	if _, msg := errorOf(t, out); !strings.Contains(msg, "already holds 10.1.2.2, 2001:db8::2") {
		t.Errorf("second ADD error %q does not name the addresses held", msg)
	}
	if after := files(t, dataDir); after != before {
		t.Errorf("second ADD changed the lease directory:\n%s\nwant\n%s", after, before)
	}
	// Another interface of the same container is another attachment.
	if got := ipsOf(t, mustRun(t, call{cmd: "ADD", id: "c1", ifname: "net1", conf: c})); got[0] != "10.1.2.3/24" {
		t.Errorf("ADD c1/net1 = %v, want 10.1.2.3/24 first", got)
	}
}

func TestDel(t *testing.T) {
	dataDir := t.TempDir()
	c := conf("1.0.0", dataDir, dualStack)
	mustRun(t, call{cmd: "ADD", id: "c1", conf: c})
	mustRun(t, call{cmd: "ADD", id: "c2", conf: c})
	for i := 0; i < 2; i++ { // a second DEL succeeds too
		mustRun(t, call{cmd: "DEL", id: "c1", conf: c})
	}
	mustRun(t, call{cmd: "DEL", id: "never-added", conf: c})
	want := `10.1.2.3=c2\r\neth0 2001:db8::3=c2\r\neth0 last_reserved_ip.0=10.1.2.3 last_reserved_ip.1=2001:db8::3 lock=`
	if got := files(t, dataDir); got != want {
		t.Errorf("after DEL c1:\n%s\nwant\n%s", got, want)
	}
	// DEL reads only name and dataDir: ranges that no longer validate do not block it.
	mustRun(t, call{cmd: "DEL", id: "c2", conf: conf("1.0.0", dataDir, `"ranges":[[{"subnet":"bogus"}]]`)})
	if got := files(t, dataDir); got != "last_reserved_ip.0=10.1.2.3 last_reserved_ip.1=2001:db8::3 lock=" {
		t.Errorf("after DEL c2: %s", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "testnet"))
	for _, e := range entries {
		if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip.") {
			t.Errorf("after every DEL the lease directory still holds %s", e.Name())
		}
	}
	// DEL on a network that never leased anything creates nothing.
	empty := t.TempDir()
	mustRun(t, call{cmd: "DEL", id: "c1", conf: conf("1.0.0", empty, dualStack)})
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("DEL of an unknown network created %v", entries)
	}
}

func TestCheck(t *testing.T) {
	prev := func(ips ...string) string {
		var parts []string
		for _, ip := range ips {
			parts = append(parts, `{"address":"`+ip+`"}`)
		}
		return `"prevResult":{"cniVersion":"1.0.0","ips":[` + strings.Join(parts, ",") + `]}`
	}
	tests := []struct {
		name  string
		id    string
		extra []string
		err   string
	}{
		{name: "leases_match", id: "c1", extra: []string{prev("10.1.2.2/24", "2001:db8::2/64")}},
		{name: "foreign_address_ignored", id: "c1", extra: []string{prev("10.1.2.2/24", "192.168.9.9/24")}},
		{name: "no_prevResult_some_lease", id: "c1"},
		{name: "legacy_lease_matches", id: "old", extra: []string{prev("10.1.2.40/24")}},
		{name: "missing_lease", id: "c1", extra: []string{prev("10.1.2.99/24")}, err: "prevResult address 10.1.2.99 is not leased"},
		{name: "lease_of_another", id: "c1", extra: []string{prev("10.1.2.3/24")}, err: `leased to container "c2" interface "eth0", not to container "c1"`},
		{name: "unknown_container", id: "c9", err: `no address is leased to container "c9"`},
	}
	dataDir := t.TempDir()
	seed(t, dataDir, map[string]string{"10.1.2.40": "old"})
	mustRun(t, call{cmd: "ADD", id: "c1", conf: conf("1.0.0", dataDir, dualStack)})
	mustRun(t, call{cmd: "ADD", id: "c2", conf: conf("1.0.0", dataDir, dualStack)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(t, call{cmd: "CHECK", id: tt.id, conf: conf("1.0.0", dataDir, dualStack, tt.extra...)})
			if tt.err == "" {
				if code != 0 {
					t.Errorf("CHECK = %s, want success", out)
				}
				return
			}
			if gotCode, msg := errorOf(t, out); gotCode != 3 || !strings.Contains(msg, tt.err) {
				t.Errorf("CHECK = %d %q, want 3 %q", gotCode, msg, tt.err)
			}
		})
	}
}

// A simulated reboot — the boot record names another boot, the leases of
// that boot are still on disk — frees exactly those leases, and a runtime
// re-creating a container with the same ID (podman does) gets an address
// instead of "duplicate allocation".
func TestReADDAfterReboot(t *testing.T) {
	dataDir := t.TempDir()
	c := conf("1.0.0", dataDir, `"ranges":[[{"subnet":"10.1.2.0/24"}]]`)
	mustRun(t, call{cmd: "ADD", id: "c1", conf: c})
	mustRun(t, call{cmd: "ADD", id: "c2", conf: c})
	if out, code := run(t, call{cmd: "ADD", id: "c1", conf: c}); code == 0 {
		t.Fatalf("a second ADD of c1 in the same boot succeeded: %s", out)
	}
	record := filepath.Join(dataDir, ".host-local-boot", "testnet")
	if err := os.WriteFile(record, []byte("00000000-0000-0000-0000-000000000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	ips := ipsOf(t, mustRun(t, call{cmd: "ADD", id: "c1", conf: c}))
	if len(ips) != 1 {
		t.Fatalf("ADD of c1 after the reboot = %v", ips)
	}
	want := fmt.Sprintf(`%s=c1\r\neth0 last_reserved_ip.0=%s lock=`, strings.TrimSuffix(ips[0], "/24"), strings.TrimSuffix(ips[0], "/24"))
	if got := files(t, dataDir); got != want {
		t.Errorf("after the reboot and the re-ADD:\n%s\nwant (c2's lease of the earlier boot gone too)\n%s", got, want)
	}
}
