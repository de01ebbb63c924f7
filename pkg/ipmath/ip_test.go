package ipmath

import (
	"net"
	"testing"
)

func TestNext(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10.0.0.1", "10.0.0.2"},
		{"10.0.0.255", "10.0.1.0"},
		{"255.255.255.255", "0.0.0.0"},
		{"fd00::ffff", "fd00::1:0"},
	}
	for _, tt := range tests {
		in := net.ParseIP(tt.in)
		if v4 := in.To4(); v4 != nil {
			in = v4
		}
		before := in.String()
		if got := Next(in); got.String() != tt.want {
			t.Errorf("Next(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if in.String() != before {
			t.Errorf("Next(%s) changed its argument to %s", tt.in, in)
		}
	}
}

func TestFirstHost(t *testing.T) {
	for _, tt := range []struct{ cidr, want string }{
		{"10.1.2.77/24", "10.1.2.1"},
		{"10.1.255.255/16", "10.1.0.1"},
		{"fd00::1234/64", "fd00::1"},
	} {
		_, n, _ := net.ParseCIDR(tt.cidr)
		if got := FirstHost(*n); got.String() != tt.want {
			t.Errorf("FirstHost(%s) = %s, want %s", tt.cidr, got, tt.want)
		}
	}
}
