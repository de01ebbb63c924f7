package main

import (
	"context"
	"net"
)

// Stand-ins for pkg/firewall's types, with the same shape, until that
// package builds; then they become aliases.
type (
	fwOwner = struct {
		Plugin, Network, ContainerID, IfName string
	}
	fwMasq       = struct{ Addr net.IPNet }
	fwSpoofCheck = struct {
		HostIface string
		MAC       net.HardwareAddr
		IPs       []net.IP
	}
	fwRules = struct {
		Masq       []fwMasq
		SpoofCheck *fwSpoofCheck
	}
)

// fwBackend is pkg/firewall's Backend as the bridge uses it.
type fwBackend interface {
	Ensure(ctx context.Context, o fwOwner, r fwRules) error
	Remove(ctx context.Context, o fwOwner) error
	Check(ctx context.Context, o fwOwner, r fwRules) error
	GC(ctx context.Context, plugin, network string, keep []fwOwner) error
}

const pluginBridge = "bridge"
