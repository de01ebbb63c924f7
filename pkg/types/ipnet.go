package types

import (
	"encoding/json"
	"fmt"
	"net"
)

// IPNet is a net.IPNet that travels in JSON as a CIDR string keeping the
// host part, as in "10.1.2.3/24".
type IPNet net.IPNet

// ParseCIDR parses a CIDR string and keeps the host part of the address.
func ParseCIDR(s string) (*net.IPNet, error) {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil, err
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return &net.IPNet{IP: ip, Mask: n.Mask}, nil
}

// String returns the CIDR form.
func (n IPNet) String() string {
	p := net.IPNet(n)
	return p.String()
}

// MarshalJSON writes the CIDR string.
func (n IPNet) MarshalJSON() ([]byte, error) {
	return json.Marshal(n.String())
}

// UnmarshalJSON reads a CIDR string.
func (n *IPNet) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	p, err := ParseCIDR(s)
	if err != nil {
		return fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	*n = IPNet(*p)
	return nil
}

// Ptr returns a pointer to v, for the optional fields of results and
// configurations.
func Ptr[T any](v T) *T { return &v }

// normIP returns IPv4 addresses in their 4-byte form, so decoded results
// compare equal to the ones plugins build.
func normIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}

// family returns 4 or 6.
func family(ip net.IP) int {
	if ip.To4() != nil {
		return 4
	}
	return 6
}
