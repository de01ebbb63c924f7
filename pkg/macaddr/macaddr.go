// Package macaddr parses and chooses the MAC address a configuration asks
// for an interface: one parser for every plugin (bridge's container MAC,
// tuning's mac), with one wording of its errors.
package macaddr

import (
	"net"

	"cnisuite/pkg/types"
)

// ParseUnicast parses value, the MAC that field asks for, as an interface
// address: six bytes, not multicast. Its errors are invalid configuration
// (code 7) naming the field and the value.
func ParseUnicast(field, value string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(value)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: %w", field, value, err)
	}
	if len(mac) != 6 {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: not a 6-byte Ethernet address", field, value)
	}
	if mac[0]&1 == 1 {
		return nil, types.Errorf(types.ErrInvalidConfig, "%s %q: a multicast address cannot be an interface address", field, value)
	}
	return mac, nil
}

// Source is one place a MAC can come from: the field that names it in
// messages and its value, "" when not given.
type Source struct {
	Field, Value string
}

// Choose parses every given source, in order, and returns the last one's
// MAC (the later source overrides the earlier), nil when none is given. A
// source that does not parse is an error even when a later one overrides it.
func Choose(sources ...Source) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	for _, s := range sources {
		if s.Value == "" {
			continue
		}
		m, err := ParseUnicast(s.Field, s.Value)
		if err != nil {
			return nil, err
		}
		mac = m
	}
	return mac, nil
}

// FromCNI chooses a container's MAC as the reference plugins do, the later
// source overriding the earlier: the MAC key of CNI_ARGS (cniArgs),
// args.cni.mac (argsMAC), runtimeConfig.mac (runtimeMAC, the mac
// capability). Nil when none is given.
func FromCNI(cniArgs, argsMAC, runtimeMAC string) (net.HardwareAddr, error) {
	args, err := types.ParseArgs(cniArgs)
	if err != nil {
		return nil, err
	}
	return Choose(Source{Field: "CNI_ARGS MAC", Value: args["MAC"]}, Source{Field: "args.cni.mac", Value: argsMAC},
		Source{Field: "runtimeConfig.mac", Value: runtimeMAC})
}

// Same reports whether the text s is the address mac, in any letter case
// or notation net.ParseMAC takes.
func Same(s string, mac net.HardwareAddr) bool {
	m, err := net.ParseMAC(s)
	return err == nil && m.String() == mac.String()
}
