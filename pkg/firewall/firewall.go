package firewall

import (
	"context"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/types"
)

// The shared vocabulary lives in package fwapi, below the backends, so
// that they need not import this package; these names keep it at hand for
// plugins.
type (
	// Owner identifies one attachment (fwapi.Owner).
	Owner = fwapi.Owner
	// Rules is everything one attachment wants (fwapi.Rules).
	Rules = fwapi.Rules
	// Masq is one masqueraded container address (fwapi.Masq).
	Masq = fwapi.Masq
	// SpoofCheck is the MAC/IP spoof check of a veth (fwapi.SpoofCheck).
	SpoofCheck = fwapi.SpoofCheck
	// PortMaps forwards host ports to one container (fwapi.PortMaps).
	PortMaps = fwapi.PortMaps
	// Isolation is the icc and isolate of a bridge attachment
	// (fwapi.Isolation).
	Isolation = fwapi.Isolation
	// PortMapping is one forwarded host port (fwapi.PortMapping).
	PortMapping = fwapi.PortMapping
	// Backend programs the rules of attachments (fwapi.Backend).
	Backend = fwapi.Backend
	// MappingReader reads the host ports back (fwapi.MappingReader).
	MappingReader = fwapi.MappingReader
)

// Plugin names an Owner may carry.
const (
	PluginBridge  = fwapi.PluginBridge
	PluginPortmap = fwapi.PluginPortmap
)

// Isolate modes of Isolation.Isolate.
const (
	IsolateOn     = fwapi.IsolateOn
	IsolateStrict = fwapi.IsolateStrict
)

// Backend kinds accepted by New.
const (
	KindNFTables = fwapi.KindNFTables
	KindIPTables = fwapi.KindIPTables
)

// ErrMissing is wrapped by Check when a rule is not in place.
var ErrMissing = fwapi.ErrMissing

// ErrConflict is wrapped by Ensure when another owner holds a host port or
// an address the rules need.
var ErrConflict = fwapi.ErrConflict

// New returns the backend of the given kind; "" returns the automatic
// choice (auto): per network, the backend the node gives reason for when
// the network first gets rules, recorded under RecordRoot until its last
// attachment goes. Either way, host ports are claimed under RecordRoot
// before they are written (claimed, claims_linux.go), so that each has one
// owner on the node. New itself reads nothing of the node.
func New(ctx context.Context, kind string) (Backend, error) {
	store := nodeClaims()
	switch kind {
	case KindNFTables:
		return &claimed{nftables.New(), store}, nil
	case KindIPTables:
		return &claimed{iptables.New(), store}, nil
	case "":
		return &claimed{newAuto(iptables.New(), nftables.New()), store}, nil
	}
	return nil, types.Errorf(types.ErrInvalidConfig, "backend %q: must be %q or %q", kind, KindIPTables, KindNFTables)
}

// choose returns first when it is usable, else second when it is.
func choose(ctx context.Context, first, second Backend) (Backend, error) {
	firstErr := first.Usable(ctx)
	if firstErr == nil {
		return first, nil
	}
	if err := second.Usable(ctx); err != nil {
		return nil, types.Errorf(types.ErrNotAvailable, "neither iptables nor nftables is usable: %w; %w", firstErr, err)
	}
	return second, nil
}
