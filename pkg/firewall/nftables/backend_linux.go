package nftables

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// Backend writes each call as one netlink batch (or, for rules only nft
// builds, one `nft -f -` script) and reads over netlink, one request per
// owner chain, so neither grows with the number of attachments on the node.
type Backend struct{}

// New returns the nftables backend.
func New() *Backend { return &Backend{} }

// Usable checks that nft runs and the kernel answers nftables requests.
func (b *Backend) Usable(ctx context.Context) error {
	if _, err := exec.LookPath(nftmodel.NFT); err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: %w", err)
	}
	conn, err := nftables.New()
	if err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: %w", err)
	}
	if _, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4); err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: listing tables: %w", err)
	}
	return nil
}

// Ensure writes the owner's chains and map elements in one transaction.
func (b *Backend) Ensure(ctx context.Context, o fwapi.Owner, r fwapi.Rules) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return ensure(ctx, conn, o, r)
}

// ensure is Ensure on conn.
func ensure(ctx context.Context, conn *netfilter.Conn, o fwapi.Owner, r fwapi.Rules) error {
	desired := Chains(o, r)
	skels := skeletons(desired)
	if r.NeedsLocalnetGuard() {
		skels = append(skels, nftmodel.LocalnetGuard())
	}
	// The kernel refuses a key held in the same map; overlaps across maps
	// are read from the ruleset only where the node's host port claims did
	// not already decide (a rootless runtime keeps none): the claims are
	// the owner check, and the read grows with the pods.
	if !fwapi.PortsClaimed(ctx) {
		if err := nftmodel.CrossConflict(conn, o, desired); err != nil {
			return err
		}
	}
	return nftmodel.Ensure(ctx, conn, o, desired, skels)
}

// Remove deletes the owner's chains and map elements, and what the
// reference plugins wrote for the same attachment, in one netlink
// transaction.
func (b *Backend) Remove(_ context.Context, o fwapi.Owner) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return remove(conn, o, func(batch *netfilter.Batch) error {
		return DeleteReference(conn, o, batch)
	})
}

// remove is Remove on conn, with also adding to the transaction what it
// reads (the reference plugins' rules). When what it read vanished before
// the commit (a reset of the node's firewall in between), it reads again
// and retries (nftmodel.RetryVanished).
func remove(conn *netfilter.Conn, o fwapi.Owner, also func(*netfilter.Batch) error) error {
	return nftmodel.RetryVanished(func() error { return nftmodel.Remove(conn, o, nil, also) })
}

// Check compares the owner's chains and elements with the rules r needs.
func (b *Backend) Check(_ context.Context, o fwapi.Owner, r fwapi.Rules) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return nftmodel.Check(conn, o, Chains(o, r))
}

// GC removes the network's owner chains whose owner is not kept.
func (b *Backend) GC(_ context.Context, plugin, network string, keep []fwapi.Owner) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return nftmodel.GC(conn, plugin, network, keep)
}

// portMaps are the maps keyed by host port: data maps, and the verdict
// maps of the chains of port mappings with user conditions (legacy.go).
var portMaps = map[string]bool{
	"port_dnat": true, "hostip_dnat": true, "range_dnat": true, "hostip_range_dnat": true,
	"ports": true, "hostip_ports": true, "port_ranges": true, "hostip_port_ranges": true,
}

// Mapped returns the host ports of the owner's DNAT chains, read from the
// map elements their rules' comments name ("port_dnat:udp . 53 : …",
// "hostip_dnat:192.0.2.1 . tcp . 80 : …", "range_dnat:tcp . 8000-8100 : …",
// or in legacy chains "ports:udp . 53").
func (b *Backend) Mapped(_ context.Context, o fwapi.Owner) ([]fwapi.PortMapping, error) {
	conn, err := netfilter.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return mapped(conn, o)
}

// mapped is Mapped on conn.
func mapped(conn *netfilter.Conn, o fwapi.Owner) ([]fwapi.PortMapping, error) {
	chains := []nftmodel.Chain{
		{Table: nftmodel.Port4, Name: nftmodel.ChainName(nftmodel.PrefixDNAT, o)},
		{Table: nftmodel.Port6, Name: nftmodel.ChainName(nftmodel.PrefixDNAT, o)},
	}
	existing, err := nftmodel.ReadChains(conn, chains)
	if err != nil {
		return nil, err
	}
	var out []fwapi.PortMapping
	for _, e := range existing {
		for _, el := range e.Elems() {
			if m, ok := mappingOfElem(el); ok {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func mappingOfElem(el nftmodel.Elem) (fwapi.PortMapping, bool) {
	parts := strings.Split(el.Key, " . ")
	var host net.IP
	if strings.HasPrefix(el.Set, "hostip_") && len(parts) == 3 {
		host, parts = net.ParseIP(parts[0]), parts[1:]
	}
	if !portMaps[el.Set] || len(parts) != 2 {
		return fwapi.PortMapping{}, false
	}
	first, last, isRange := strings.Cut(parts[1], "-")
	port, err := strconv.Atoi(first)
	if err != nil {
		return fwapi.PortMapping{}, false
	}
	m := fwapi.PortMapping{HostPort: port, Protocol: parts[0], HostIP: host}
	if end, err := strconv.Atoi(last); isRange && err == nil && end > port {
		m.Range = end - port + 1
	}
	return m, true
}
