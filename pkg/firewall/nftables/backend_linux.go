package nftables

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"

	"github.com/google/nftables"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/reference"
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
	if _, err := exec.LookPath(nftchain.NFT); err != nil {
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
func (b *Backend) Ensure(ctx context.Context, o fwtypes.Owner, r fwtypes.Rules) error {
	desired := Chains(o, r)
	skels := skeletons(desired)
	if r.NeedsLocalnetGuard() {
		skels = append(skels, nftchain.LocalnetGuard())
	}
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return nftchain.Ensure(ctx, conn, o, desired, skels)
}

// Remove deletes the owner's chains and map elements, and what the
// reference plugins wrote for the same attachment, in one netlink
// transaction.
func (b *Backend) Remove(_ context.Context, o fwtypes.Owner) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return nftchain.Remove(conn, o, nil, func(batch *netfilter.Batch) error {
		return reference.Delete(conn, o, batch)
	})
}

// Check compares the owner's chains with the rules r needs.
func (b *Backend) Check(_ context.Context, o fwtypes.Owner, r fwtypes.Rules) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return nftchain.Check(conn, o, Chains(o, r))
}

// GC removes the network's owner chains whose owner is not kept.
func (b *Backend) GC(_ context.Context, plugin, network string, keep []fwtypes.Owner) error {
	return nftchain.GC(plugin, network, keep)
}

// Mapped returns the host ports of the owner's DNAT chains, read from the
// map elements their rules' comments name ("ports:udp . 53",
// "hostip_ports:192.0.2.1 . tcp . 80").
func (b *Backend) Mapped(_ context.Context, o fwtypes.Owner) ([]fwtypes.PortMapping, error) {
	conn, err := netfilter.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	chains := []nftchain.Chain{
		{Table: nftchain.Port4, Name: nftchain.ChainName(nftchain.PrefixDNAT, o)},
		{Table: nftchain.Port6, Name: nftchain.ChainName(nftchain.PrefixDNAT, o)},
	}
	existing, err := nftchain.ReadChains(conn, chains)
	if err != nil {
		return nil, err
	}
	var out []fwtypes.PortMapping
	for _, e := range existing {
		for _, el := range e.Elems() {
			if m, ok := mappingOfElem(el); ok {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func mappingOfElem(el nftchain.Elem) (fwtypes.PortMapping, bool) {
	parts := strings.Split(el.Key, " . ")
	var host net.IP
	switch {
	case el.Set == "ports" && len(parts) == 2:
	case el.Set == "hostip_ports" && len(parts) == 3:
		host, parts = net.ParseIP(parts[0]), parts[1:]
	default:
		return fwtypes.PortMapping{}, false
	}
	port, err := strconv.Atoi(parts[1])
	if err != nil {
		return fwtypes.PortMapping{}, false
	}
	return fwtypes.PortMapping{HostPort: port, Protocol: parts[0], HostIP: host}, true
}
