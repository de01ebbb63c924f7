package fwapi

import (
	"fmt"
	"net"
)

// IsV4 reports whether ip is an IPv4 address.
func IsV4(ip net.IP) bool { return ip.To4() != nil }

// ForFamily returns the mappings that apply to a container address of the
// given family: those without hostIP, with an unspecified one, or with a
// hostIP of that family.
func ForFamily(ms []PortMapping, v4 bool) []PortMapping {
	var out []PortMapping
	for _, m := range ms {
		if m.HostIP == nil || IsV4(m.HostIP) == v4 {
			out = append(out, m)
		}
	}
	return out
}

// SpecificHost returns the mapping's host address, or nil when it means
// every local address.
func (m PortMapping) SpecificHost() net.IP {
	if m.HostIP == nil || m.HostIP.IsUnspecified() {
		return nil
	}
	return m.HostIP
}

// NeedsLocalnetGuard reports whether r lets 127.0.0.1 reach a container:
// then both backends put the node-wide localnet guard in place.
func (r Rules) NeedsLocalnetGuard() bool {
	pm := r.PortMaps
	return pm != nil && pm.SNAT && !pm.MasqAll && pm.ContainerV4 != nil && len(ForFamily(pm.Mappings, true)) > 0
}

// SubnetOf returns the network containing n (host bits cleared).
func SubnetOf(n *net.IPNet) *net.IPNet {
	return &net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask}
}

// HostNet returns ip as a single-address network.
func HostNet(ip net.IP) *net.IPNet {
	bits := 128
	if IsV4(ip) {
		bits = 32
		ip = ip.To4()
	}
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}
}

// JoinHostPort writes a DNAT destination: "10.0.0.2:80", "[fd00::2]:80".
func JoinHostPort(ip net.IP, port int) string {
	if IsV4(ip) {
		return fmt.Sprintf("%s:%d", ip.To4(), port)
	}
	return fmt.Sprintf("[%s]:%d", ip, port)
}
