package allocator

import (
	"errors"
	"net"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func mustRange(t *testing.T, subnet, start, end, gw string) Range {
	t.Helper()
	ip, n, err := net.ParseCIDR(subnet)
	if err != nil {
		t.Fatalf("ParseCIDR(%q): %v", subnet, err)
	}
	return Range{Subnet: net.IPNet{IP: ip, Mask: n.Mask}, RangeStart: net.ParseIP(start),
		RangeEnd: net.ParseIP(end), Gateway: net.ParseIP(gw)}
}

func TestRangeCanonicalize(t *testing.T) {
	tests := []struct {
		name               string
		subnet, start, end string
		gw                 string
		wantStart, wantEnd string
		wantGW             string
		wantErr            string
	}{
		{name: "v4_defaults", subnet: "10.1.2.0/24", wantStart: "10.1.2.1", wantEnd: "10.1.2.254", wantGW: "10.1.2.1"},
		{name: "v6_defaults_end_is_last_address", subnet: "2001:db8::/64", wantStart: "2001:db8::1",
			wantEnd: "2001:db8::ffff:ffff:ffff:ffff", wantGW: "2001:db8::1"},
		{name: "v4_slash30", subnet: "10.0.0.0/30", wantStart: "10.0.0.1", wantEnd: "10.0.0.2", wantGW: "10.0.0.1"},
		{name: "explicit_fields", subnet: "10.1.2.0/24", start: "10.1.2.10", end: "10.1.2.20", gw: "10.1.2.254",
			wantStart: "10.1.2.10", wantEnd: "10.1.2.20", wantGW: "10.1.2.254"},
		{name: "onlink_gateway_outside_subnet", subnet: "10.1.2.0/24", gw: "169.254.1.1",
			wantStart: "10.1.2.1", wantEnd: "10.1.2.254", wantGW: "169.254.1.1"},
		{name: "host_bits_set", subnet: "10.1.2.3/24", wantErr: `ipam.ranges[0][0].subnet "10.1.2.3/24": host bits set; for a /24 the network address is 10.1.2.0`},
		{name: "slash31_too_small", subnet: "10.1.2.0/31", wantErr: "network too small"},
		{name: "slash32_too_small", subnet: "10.1.2.0/32", wantErr: "network too small"},
		{name: "slash127_too_small", subnet: "2001:db8::/127", wantErr: "network too small"},
		{name: "slash128_too_small", subnet: "2001:db8::/128", wantErr: "network too small"},
		{name: "start_outside", subnet: "10.1.2.0/24", start: "10.1.3.1", wantErr: "ipam.ranges[0][0].rangeStart 10.1.3.1: not in subnet 10.1.2.0/24"},
		{name: "end_outside", subnet: "10.1.2.0/24", end: "10.1.3.1", wantErr: "rangeEnd 10.1.3.1: not in subnet"},
		{name: "start_after_end", subnet: "10.1.2.0/24", start: "10.1.2.50", end: "10.1.2.40", wantErr: "rangeStart 10.1.2.50 is after rangeEnd 10.1.2.40"},
		{name: "start_wrong_family", subnet: "10.1.2.0/24", start: "2001:db8::1", wantErr: "rangeStart 2001:db8::1: not in subnet"},
		{name: "gateway_wrong_family", subnet: "10.1.2.0/24", gw: "2001:db8::1", wantErr: "gateway 2001:db8::1: not of the address family"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRange(t, tt.subnet, tt.start, tt.end, tt.gw)
			err := r.Canonicalize("ipam.ranges[0][0]")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Canonicalize(%s) = %v, want error containing %q", tt.subnet, err, tt.wantErr)
				}
				if !errors.Is(err, types.ErrInvalidConfig) {
					t.Errorf("Canonicalize(%s) error %v is not ErrInvalidConfig", tt.subnet, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonicalize(%s) = %v", tt.subnet, err)
			}
			got := []string{r.RangeStart.String(), r.RangeEnd.String(), r.Gateway.String()}
			want := []string{tt.wantStart, tt.wantEnd, tt.wantGW}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("Canonicalize(%s) start/end/gw = %v, want %v", tt.subnet, got, want)
			}
			if len(r.RangeStart) != len(r.Subnet.IP) || len(r.Gateway) != len(r.Subnet.IP) {
				t.Errorf("Canonicalize(%s) left addresses of mixed lengths", tt.subnet)
			}
		})
	}
}

func TestRangeSetCanonicalize(t *testing.T) {
	tests := []struct {
		name    string
		set     [][4]string
		wantErr string
	}{
		{name: "two_ranges_one_subnet", set: [][4]string{{"10.0.0.0/24", "10.0.0.10", "10.0.0.20"}, {"10.0.0.0/24", "10.0.0.30", "10.0.0.40"}}},
		{name: "two_subnets", set: [][4]string{{"10.0.0.0/24"}, {"10.0.1.0/24"}}},
		{name: "overlap", set: [][4]string{{"10.0.0.0/24"}, {"10.0.0.0/25"}}, wantErr: "ranges 10.0.0.1-10.0.0.254 and 10.0.0.1-10.0.0.126 overlap"},
		{name: "mixed_families", set: [][4]string{{"10.0.0.0/24"}, {"2001:db8::/64"}}, wantErr: "mixed address families"},
		{name: "empty", wantErr: "empty range set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set RangeSet
			for _, r := range tt.set {
				set = append(set, mustRange(t, r[0], r[1], r[2], r[3]))
			}
			err := set.Canonicalize("ipam.ranges[0]")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Canonicalize() = %v, want error %q", err, tt.wantErr)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	tests := []struct {
		name string
		set  [][4]string
		last string
		want string
	}{
		{name: "from_start_skips_gateway", set: [][4]string{{"10.0.0.0/29"}}, want: "10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6"},
		{name: "after_last_then_wrap", set: [][4]string{{"10.0.0.0/29"}}, last: "10.0.0.4", want: "10.0.0.5 10.0.0.6 10.0.0.2 10.0.0.3 10.0.0.4"},
		{name: "last_outside_set_starts_at_beginning", set: [][4]string{{"10.0.0.0/29"}}, last: "10.9.9.9", want: "10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6"},
		{name: "gateway_in_middle", set: [][4]string{{"10.0.0.0/29", "", "", "10.0.0.4"}}, want: "10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.5 10.0.0.6"},
		{name: "two_ranges_wrap_across", set: [][4]string{{"10.0.0.0/29", "10.0.0.5"}, {"10.0.1.0/30"}}, last: "10.0.1.2",
			want: "10.0.0.5 10.0.0.6 10.0.1.2"},
		{name: "two_ranges_from_end_of_first", set: [][4]string{{"10.0.0.0/29", "10.0.0.5"}, {"10.0.1.0/30"}}, last: "10.0.0.6",
			want: "10.0.1.2 10.0.0.5 10.0.0.6"},
		{name: "v6", set: [][4]string{{"2001:db8::/126"}}, want: "2001:db8::2 2001:db8::3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set RangeSet
			for _, r := range tt.set {
				set = append(set, mustRange(t, r[0], r[1], r[2], r[3]))
			}
			if err := set.Canonicalize("s"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ip := range set.Candidates(net.ParseIP(tt.last)) {
				got = append(got, ip.String())
				if len(got) > 100 {
					break
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Candidates(%s) = %v, want %v", tt.last, got, tt.want)
			}
		})
	}
}
