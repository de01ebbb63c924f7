package firewall

import (
	"context"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/iptables"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/types"
)

// The shared vocabulary lives in package fwtypes, below the backends, so
// that they need not import this package; these names keep it at hand for
// plugins.
type (
	// Owner identifies one attachment (fwtypes.Owner).
	Owner = fwtypes.Owner
	// Rules is everything one attachment wants (fwtypes.Rules).
	Rules = fwtypes.Rules
	// Masq is one masqueraded container address (fwtypes.Masq).
	Masq = fwtypes.Masq
	// SpoofCheck is the MAC/IP spoof check of a veth (fwtypes.SpoofCheck).
	SpoofCheck = fwtypes.SpoofCheck
	// PortMaps forwards host ports to one container (fwtypes.PortMaps).
	PortMaps = fwtypes.PortMaps
	// Isolation is the icc and isolate of a bridge attachment
	// (fwtypes.Isolation).
	Isolation = fwtypes.Isolation
	// PortMapping is one forwarded host port (fwtypes.PortMapping).
	PortMapping = fwtypes.PortMapping
	// Backend programs the rules of attachments (fwtypes.Backend).
	Backend = fwtypes.Backend
	// MappingReader reads the host ports back (fwtypes.MappingReader).
	MappingReader = fwtypes.MappingReader
)

// Plugin names an Owner may carry.
const (
	PluginBridge  = fwtypes.PluginBridge
	PluginPortmap = fwtypes.PluginPortmap
)

// Isolate modes of Isolation.Isolate.
const (
	IsolateOn     = fwtypes.IsolateOn
	IsolateStrict = fwtypes.IsolateStrict
)

// Backend kinds accepted by New.
const (
	KindNFTables = "nftables"
	KindIPTables = "iptables"
)

// ErrMissing is wrapped by Check when a rule is not in place.
var ErrMissing = fwtypes.ErrMissing

// ErrConflict is wrapped by Ensure when another owner holds a host port or
// an address the rules need.
var ErrConflict = fwtypes.ErrConflict

// New returns the backend of the given kind; "" picks iptables when it is
// usable and nftables otherwise, once per call and without starting a
// process on almost every node (iptables.Backend.Usable).
func New(ctx context.Context, kind string) (Backend, error) {
	switch kind {
	case KindNFTables:
		return nftables.New(), nil
	case KindIPTables:
		return iptables.New(), nil
	case "":
		return choose(ctx, iptables.New(), nftables.New())
	}
	return nil, types.Errorf(types.ErrInvalidConfig, "backend %q: must be %q or %q", kind, KindIPTables, KindNFTables)
}

// choose returns ipt when it is usable, else nft when it is.
func choose(ctx context.Context, ipt, nft Backend) (Backend, error) {
	iptErr := ipt.Usable(ctx)
	if iptErr == nil {
		return ipt, nil
	}
	if err := nft.Usable(ctx); err != nil {
		return nil, types.Errorf(types.ErrNotAvailable, "neither iptables nor nftables is usable: %w; %w", iptErr, err)
	}
	return nft, nil
}
