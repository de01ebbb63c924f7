// Package allocator hands out one address per range set, round-robin from
// the last address reserved in that set, against a lease Store. It knows
// nothing about files: the disk store and the fake of the tests implement
// Store.
package allocator

import (
	"bytes"
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/ipmath"
	"cnisuite/pkg/types"
)

// Range is one pool of addresses inside a subnet. After Canonicalize every
// field is set and every address has the length of its family (4 or 16).
type Range struct {
	Subnet     net.IPNet
	RangeStart net.IP
	RangeEnd   net.IP
	Gateway    net.IP
}

// RangeSet is a list of ranges of one address family. One ADD takes exactly
// one address from each set.
type RangeSet []Range

// Canonicalize validates r and fills in the defaults: rangeStart is the
// network address + 1, rangeEnd the broadcast address - 1 (IPv4) or the last
// address of the subnet (IPv6), gateway the network address + 1. field names
// r in error messages, like "ipam.ranges[0][1]".
func (r *Range) Canonicalize(field string) error {
	ones, bits := r.Subnet.Mask.Size()
	ip := canonicalIP(r.Subnet.IP)
	switch {
	case ip == nil || bits == 0:
		return types.Errorf(types.ErrInvalidConfig, "%s.subnet %q: not a valid CIDR", field, r.Subnet.String())
	case len(ip)*8 != bits:
		return types.Errorf(types.ErrInvalidConfig, "%s.subnet %q: address and mask are of different families", field, r.Subnet.String())
	case ones > bits-2:
		return types.Errorf(types.ErrInvalidConfig, "%s.subnet %q: network too small to allocate from (a /%d leaves no host addresses; use /%d or larger)",
			field, r.Subnet.String(), ones, bits-2)
	case !ip.Equal(ip.Mask(r.Subnet.Mask)):
		return types.Errorf(types.ErrInvalidConfig, "%s.subnet %q: host bits set; for a /%d the network address is %s",
			field, r.Subnet.String(), ones, ip.Mask(r.Subnet.Mask))
	}
	r.Subnet = net.IPNet{IP: ip, Mask: r.Subnet.Mask}
	var err error
	if r.RangeStart, err = r.member(field+".rangeStart", r.RangeStart, ipmath.Next(ip)); err != nil {
		return err
	}
	if r.RangeEnd, err = r.member(field+".rangeEnd", r.RangeEnd, lastHost(r.Subnet)); err != nil {
		return err
	}
	if bytes.Compare(r.RangeStart, r.RangeEnd) > 0 {
		return types.Errorf(types.ErrInvalidConfig, "%s: rangeStart %s is after rangeEnd %s", field, r.RangeStart, r.RangeEnd)
	}
	return r.canonicalGateway(field)
}

// member returns ip in canonical form after checking that it lies in the
// subnet, or def when ip is unset.
func (r *Range) member(field string, ip, def net.IP) (net.IP, error) {
	if ip == nil {
		return def, nil
	}
	c := canonicalIP(ip)
	if len(c) != len(r.Subnet.IP) || !r.Subnet.Contains(c) {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %s: not in subnet %s", field, ip, r.Subnet.String())
	}
	return c, nil
}

// canonicalGateway defaults the gateway to the network address + 1. A
// gateway outside the subnet is allowed (on-link gateways), one of the other
// address family is not.
func (r *Range) canonicalGateway(field string) error {
	if r.Gateway == nil {
		r.Gateway = ipmath.Next(r.Subnet.IP)
		return nil
	}
	gw := canonicalIP(r.Gateway)
	if len(gw) != len(r.Subnet.IP) {
		return types.Errorf(types.ErrInvalidConfig, "%s.gateway %s: not of the address family of subnet %s", field, r.Gateway, r.Subnet.String())
	}
	r.Gateway = gw
	return nil
}

// Contains reports whether ip lies between rangeStart and rangeEnd of r.
func (r *Range) Contains(ip net.IP) bool {
	c := canonicalIP(ip)
	return c != nil && len(c) == len(r.Subnet.IP) && r.Subnet.Contains(c) &&
		bytes.Compare(c, r.RangeStart) >= 0 && bytes.Compare(c, r.RangeEnd) <= 0
}

// Overlaps reports whether r and o share an address.
func (r *Range) Overlaps(o *Range) bool {
	return len(r.Subnet.IP) == len(o.Subnet.IP) &&
		bytes.Compare(r.RangeStart, o.RangeEnd) <= 0 && bytes.Compare(o.RangeStart, r.RangeEnd) <= 0
}

// String returns "start-end".
func (r *Range) String() string {
	return r.RangeStart.String() + "-" + r.RangeEnd.String()
}

// Canonicalize validates every range of the set, and that the ranges share
// one family and do not overlap. field names the set, like "ipam.ranges[0]".
func (s RangeSet) Canonicalize(field string) error {
	if len(s) == 0 {
		return types.Errorf(types.ErrInvalidConfig, "%s: empty range set", field)
	}
	for i := range s {
		if err := s[i].Canonicalize(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if len(s[i].Subnet.IP) != len(s[j].Subnet.IP) {
				return types.Errorf(types.ErrInvalidConfig, "%s: mixed address families: %s and %s",
					field, s[i].Subnet.String(), s[j].Subnet.String())
			}
			if s[i].Overlaps(&s[j]) {
				return types.Errorf(types.ErrInvalidConfig, "%s: ranges %s and %s overlap", field, s[i].String(), s[j].String())
			}
		}
	}
	return nil
}

// Family returns 4 or 6.
func (s RangeSet) Family() int {
	if len(s) > 0 && len(s[0].Subnet.IP) == net.IPv6len {
		return 6
	}
	return 4
}

// RangeFor returns the index of the range of s that contains ip, or -1.
func (s RangeSet) RangeFor(ip net.IP) int {
	for i := range s {
		if s[i].Contains(ip) {
			return i
		}
	}
	return -1
}

// Overlaps reports whether any range of s overlaps any range of o.
func (s RangeSet) Overlaps(o RangeSet) bool {
	for i := range s {
		for j := range o {
			if s[i].Overlaps(&o[j]) {
				return true
			}
		}
	}
	return false
}

// String lists the ranges, comma-separated.
func (s RangeSet) String() string {
	parts := make([]string, len(s))
	for i := range s {
		parts[i] = s[i].String()
	}
	return strings.Join(parts, ",")
}

// canonicalIP returns ip as 4 bytes for IPv4 and 16 bytes for IPv6, or nil.
func canonicalIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	if len(ip) == net.IPv6len {
		return ip
	}
	return nil
}

// lastHost is the last address handed out by default: the broadcast address
// - 1 for IPv4, the last address of the subnet for IPv6 (as the reference).
func lastHost(n net.IPNet) net.IP {
	out := make(net.IP, len(n.IP))
	for i := range out {
		out[i] = n.IP[i] | ^n.Mask[i]
	}
	if len(out) == net.IPv4len {
		out[3]--
	}
	return out
}
