// Package fwapi is the vocabulary every firewall layer shares: who owns
// rules (Owner), what an attachment wants (Rules), the Backend interface
// and its errors. It sits below the backends so that they can use it
// without importing pkg/firewall, which constructs them; pkg/firewall
// re-exports it under its own names.
package fwapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/types"
)

// Plugin names an Owner may carry. Remove uses them to decide which rules of
// the reference plugins belong to the attachment too.
const (
	PluginBridge  = "bridge"
	PluginPortmap = "portmap"
)

// Backend kinds: the names a configuration gives a backend by.
const (
	KindNFTables = "nftables"
	KindIPTables = "iptables"
)

// Owner identifies one attachment; every rule a backend writes is tagged
// with it so that Remove, Check and GC touch exactly the owner's rules.
type Owner struct {
	Plugin      string // PluginBridge, PluginPortmap
	Network     string // network name of the configuration
	ContainerID string
	IfName      string
}

// String returns the owner as it appears in rule comments.
func (o Owner) String() string {
	return fmt.Sprintf("%s/%s/%s/%s", o.Plugin, o.Network, o.ContainerID, o.IfName)
}

// Hash returns the hex digest naming the owner's chains.
func (o Owner) Hash() string {
	return hexHash(o.Plugin, o.Network, o.ContainerID, o.IfName)
}

// NetHash returns the hex digest shared by every owner of a network.
func (o Owner) NetHash() string { return hexHash(o.Plugin, o.Network) }

func hexHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// Rules is everything one attachment wants from the firewall.
type Rules struct {
	Masq       []Masq      // bridge ipMasq
	SpoofCheck *SpoofCheck // bridge macspoofchk
	PortMaps   *PortMaps   // portmap
	Isolation  *Isolation  // bridge icc and isolate
}

// Empty reports whether r asks for no rule at all.
func (r Rules) Empty() bool {
	return r.Masq == nil && r.SpoofCheck == nil && r.PortMaps == nil && r.Isolation == nil
}

// Isolate modes of Isolation.Isolate.
const (
	IsolateOn     = "true"   // no forwarding to or from other isolated bridges
	IsolateStrict = "strict" // and none to or from anything but the uplinks
)

// Isolation limits what an attachment's traffic may reach. With NoICC,
// the containers of Bridge that ask for it cannot reach each other, bridged
// (frames between their HostIfaces) or routed back through the gateway (to
// IPs from Bridge). With Isolate, nothing is forwarded between Bridge and
// the bridges of other isolated networks; IsolateStrict also drops what
// Bridge forwards to or from any interface but Uplinks. Replies and
// DNATed (port-mapped) connections always pass.
type Isolation struct {
	Bridge    string
	HostIface string
	IPs       []net.IP
	NoICC     bool
	Isolate   string   // "", IsolateOn, IsolateStrict
	Uplinks   []string // the node's default-route interfaces (IsolateStrict)
	// FilterIngress drops what is forwarded into Bridge from any other
	// interface (Docker's gateway mode "nat"): from outside the node, a
	// container is reached only through a port mapping.
	FilterIngress bool
}

// Masq masquerades traffic from Addr.IP (the container address) whose
// destination is outside Addr's subnet and not multicast.
type Masq struct {
	Addr net.IPNet // container address with the prefix of its subnet
	// Source, when set, is the address traffic leaves with (SNAT) instead
	// of the outgoing interface's (MASQUERADE); of Addr's family.
	Source net.IP
}

// SpoofCheck drops frames arriving from HostIface (the host end of the
// container's veth) whose source MAC is not MAC, and, per family present in
// IPs, IP packets whose source is not one of IPs.
type SpoofCheck struct {
	HostIface string
	MAC       net.HardwareAddr
	IPs       []net.IP
}

// PortMaps forwards host ports to one container.
type PortMaps struct {
	// ContainerV4 and ContainerV6 are the container's first address of each
	// family, with the prefix of its subnet; nil means the family is skipped.
	ContainerV4, ContainerV6 *net.IPNet
	Mappings                 []PortMapping
	// SNAT masquerades hairpin traffic (from the container's subnet) and,
	// for IPv4, traffic from 127.0.0.1 sent to the mappings.
	SNAT bool
	// MasqAll masquerades every source sent to the mappings (SNAT only).
	MasqAll bool
	// MarkBit is the iptables mark bit (0–31) hairpin packets get before
	// masquerading; the nftables backend needs no mark.
	MarkBit int
	// ExternalSetMarkChain, with iptables, is jumped to instead of marking.
	ExternalSetMarkChain string
	// ConditionsV4/V6 are extra match tokens, in the backend's own syntax,
	// put on every DNAT and SNAT rule of this container's mappings.
	ConditionsV4, ConditionsV6 []string
}

// Family returns the container address and the conditions of one family.
func (p *PortMaps) Family(v4 bool) (*net.IPNet, []string) {
	if v4 {
		return p.ContainerV4, p.ConditionsV4
	}
	return p.ContainerV6, p.ConditionsV6
}

// PortMapping is one host port forwarded to a container port, or a range
// of them: Range ports from HostPort, each to the same port of the
// container (ContainerPort equals HostPort then; see portmap's README).
type PortMapping struct {
	HostPort      int
	ContainerPort int
	Protocol      string // tcp, udp, sctp
	HostIP        net.IP // nil or unspecified: every local address of the family
	// Range is the number of ports mapped; 0 and 1 both mean one.
	Range int
}

// IsRange reports whether the mapping forwards more than one port.
func (m PortMapping) IsRange() bool { return m.Range > 1 }

// HostLast returns the last host port of the mapping.
func (m PortMapping) HostLast() int { return m.HostPort + max(m.Range, 1) - 1 }

// ContainerLast returns the last container port of the mapping.
func (m PortMapping) ContainerLast() int { return m.ContainerPort + max(m.Range, 1) - 1 }

// HostPorts writes the host ports: "8080", or "8000-8100" for a range,
// as nft writes them.
func (m PortMapping) HostPorts() string {
	if m.IsRange() {
		return fmt.Sprintf("%d-%d", m.HostPort, m.HostLast())
	}
	return fmt.Sprint(m.HostPort)
}

// Overlaps reports whether m and o forward a common host port of the same
// protocol.
func (m PortMapping) Overlaps(o PortMapping) bool {
	return m.Protocol == o.Protocol && m.HostPort <= o.HostLast() && o.HostPort <= m.HostLast()
}

// Backend programs the rules of attachments.
type Backend interface {
	// Ensure makes the owner's rules exactly r; idempotent.
	Ensure(ctx context.Context, o Owner, r Rules) error
	// Remove deletes every rule of the owner (and those the reference
	// plugins wrote for the same attachment); idempotent.
	Remove(ctx context.Context, o Owner) error
	// Check returns ErrMissing when any rule of r is not in place.
	Check(ctx context.Context, o Owner, r Rules) error
	// GC removes the rules of plugin's network whose owner is not in keep.
	GC(ctx context.Context, plugin, network string, keep []Owner) error
	// Usable returns an error when the backend cannot work on this node.
	Usable(ctx context.Context) error
}

// MappingReader is implemented by the backends (and firewall.Fake): Mapped returns
// the host ports an owner's rules forward, read from the rules themselves,
// for a DEL whose runtime passes no portMappings.
type MappingReader interface {
	Mapped(ctx context.Context, o Owner) ([]PortMapping, error)
}

// ErrMissing is wrapped by Check when a rule is not in place. Its CNI code
// is 3, as for every CHECK of the suite that finds a piece of the
// attachment gone (bridge's interfaces, host-local's leases): DEL and ADD
// the container again.
var ErrMissing error = &kindError{"firewall rule missing", types.ErrUnknownContainer}

// ErrConflict is wrapped by Ensure when another owner holds a host port or
// an address the rules need. Its CNI code is 11, as for a requested address
// that host-local finds leased: the holder may be a container on its way
// out, and the runtime may retry.
var ErrConflict error = &kindError{"firewall rule held by another attachment", types.ErrTryAgain}

// kindError is a sentinel that wraps an error kind of pkg/types, as
// fmt.Errorf("msg: %w", kind) would; built without fmt, whose first use at
// package initialisation cost every plugin process ≈ 50 µs.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg + ": " + e.kind.Error() }
func (e *kindError) Unwrap() error { return e.kind }

// portsClaimedKey marks a context whose host ports were claimed.
type portsClaimedKey struct{}

// WithPortsClaimed returns ctx marked as the context of an Ensure whose
// host ports pkg/firewall's node-wide claims already hold for its owner
// alone: a backend need not look for other owners' overlapping ports.
func WithPortsClaimed(ctx context.Context) context.Context {
	return context.WithValue(ctx, portsClaimedKey{}, true)
}

// PortsClaimed reports whether ctx was marked by WithPortsClaimed.
func PortsClaimed(ctx context.Context) bool {
	claimed, _ := ctx.Value(portsClaimedKey{}).(bool)
	return claimed
}
