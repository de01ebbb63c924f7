// Package ipmath holds small address arithmetic shared by the plugins.
package ipmath

import "net"

// Next returns ip + 1, wrapping at the end of the address space; ip itself
// is left unchanged.
func Next(ip net.IP) net.IP {
	out := make(net.IP, len(ip))
	copy(out, ip)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}

// FirstHost returns the network address of n plus one, the conventional
// gateway of a subnet.
func FirstHost(n net.IPNet) net.IP {
	return Next(n.IP.Mask(n.Mask))
}
