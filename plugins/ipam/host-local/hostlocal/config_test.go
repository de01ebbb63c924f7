package hostlocal

import (
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		version string
		ipam    string
		extra   []string
		args    string
		code    uint
		want    string
	}{
		{name: "no_ranges", ipam: `"routes":[]`, code: 7, want: "no IP ranges specified"},
		{name: "host_bits", ipam: `"ranges":[[{"subnet":"10.1.2.3/24"}]]`, code: 7,
			want: `ipam.ranges[0][0].subnet "10.1.2.3/24": host bits set; for a /24 the network address is 10.1.2.0`},
		{name: "not_cidr", ipam: `"ranges":[[{"subnet":"10.1.2.0"}]]`, code: 7, want: `ipam.ranges[0][0].subnet "10.1.2.0": not a CIDR`},
		{name: "missing_subnet", ipam: `"ranges":[[{"rangeStart":"10.1.2.3"}]]`, code: 7, want: "ipam.ranges[0][0].subnet: missing"},
		{name: "slash31", ipam: `"ranges":[[{"subnet":"10.1.2.0/31"}]]`, code: 7, want: "too small"},
		{name: "slash32", ipam: `"ranges":[[{"subnet":"10.1.2.0/32"}]]`, code: 7, want: "too small"},
		{name: "slash127", ipam: `"ranges":[[{"subnet":"2001:db8::/127"}]]`, code: 7, want: "too small"},
		{name: "slash128", ipam: `"ranges":[[{"subnet":"2001:db8::/128"}]]`, code: 7, want: "too small"},
		{name: "bad_range_start", ipam: `"ranges":[[{"subnet":"10.1.2.0/24","rangeStart":"nope"}]]`, code: 7,
			want: `ipam.ranges[0][0].rangeStart "nope": not an IP address`},
		{name: "range_end_outside", ipam: `"ranges":[[{"subnet":"10.1.2.0/24","rangeEnd":"10.1.3.9"}]]`, code: 7,
			want: "ipam.ranges[0][0].rangeEnd 10.1.3.9: not in subnet 10.1.2.0/24"},
		{name: "overlap_within_set", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"},{"subnet":"10.1.2.0/25"}]]`, code: 7,
			want: "ipam.ranges[0]: ranges 10.1.2.1-10.1.2.254 and 10.1.2.1-10.1.2.126 overlap"},
		{name: "mixed_families_in_set", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"},{"subnet":"2001:db8::/64"}]]`, code: 7,
			want: "mixed address families"},
		{name: "overlap_across_sets", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}],[{"subnet":"10.1.2.0/24"}]]`, code: 7,
			want: "ipam.ranges[1] (10.1.2.1-10.1.2.254) overlaps with ipam.ranges[0]"},
		{name: "old_style_overlaps_ranges", ipam: `"subnet":"10.1.2.0/24","ranges":[[{"subnet":"10.1.2.0/24"}]]`, code: 7,
			want: "ipam.ranges[0] (10.1.2.1-10.1.2.254) overlaps with ipam"},
		{name: "old_style_host_bits", ipam: `"subnet":"10.1.2.9/24"`, code: 7, want: `ipam.subnet "10.1.2.9/24": host bits set`},
		{name: "two_v4_sets_at_0.2.0", version: "0.2.0", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}],[{"subnet":"10.1.3.0/24"}]]`, code: 7,
			want: "cniVersion 0.2.0 does not support more than one address per family"},
		{name: "gateway_wrong_family", ipam: `"ranges":[[{"subnet":"10.1.2.0/24","gateway":"2001:db8::1"}]]`, code: 7,
			want: "ipam.ranges[0][0].gateway 2001:db8::1: not of the address family of subnet 10.1.2.0/24"},
		{name: "route_without_dst", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]],"routes":[{"gw":"10.1.2.1"}]`, code: 7,
			want: "ipam.routes[0].dst: missing"},
		{name: "bad_requested_ip", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]]`, extra: []string{`"runtimeConfig":{"ips":["x"]}`}, code: 7,
			want: `runtimeConfig.ips[0] "x": not an IP address`},
		{name: "bad_cni_args_ip", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]]`, args: "IP=zzz", code: 4, want: `CNI_ARGS IP "zzz"`},
		{name: "unknown_cni_arg", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]]`, args: "FOO=1", code: 2, want: "FOO"},
		{name: "missing_resolvconf", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]],"resolvConf":"/nonexistent/resolv.conf"`, code: 7,
			want: `ipam.resolvConf "/nonexistent/resolv.conf"`},
		{name: "bad_ipRanges", ipam: `"ranges":[[{"subnet":"10.1.2.0/24"}]]`, extra: []string{`"runtimeConfig":{"ipRanges":[[{"subnet":"10.9.0.0/31"}]]}`},
			code: 7, want: "runtimeConfig.ipRanges[0][0].subnet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.version
			if v == "" {
				v = "1.1.0"
			}
			dataDir := t.TempDir()
			out, code := run(t, call{cmd: "ADD", id: "c1", args: tt.args, conf: conf(v, dataDir, tt.ipam, tt.extra...)})
			if code == 0 {
				t.Fatalf("ADD = success %s, want error %q", out, tt.want)
			}
			gotCode, msg := errorOf(t, out)
			if gotCode != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("ADD error = %d %q, want %d containing %q", gotCode, msg, tt.code, tt.want)
			}
			if f := files(t, dataDir); f != "" {
				t.Errorf("a refused ADD left files: %s", f)
			}
		})
	}
}

func TestMissingIPAMKey(t *testing.T) {
	out, _ := run(t, call{cmd: "ADD", id: "c1", conf: `{"cniVersion":"1.0.0","name":"testnet","type":"bridge"}`})
	if code, msg := errorOf(t, out); code != 7 || !strings.Contains(msg, "missing 'ipam' key") {
		t.Errorf("ADD without ipam = %d %q, want 7 \"missing 'ipam' key\"", code, msg)
	}
}
