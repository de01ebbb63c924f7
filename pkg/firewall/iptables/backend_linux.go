package iptables

import (
	"context"
	"fmt"
	"sync"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
)

// Backend is the iptables backend: the owner chains of table nat (package
// natchain) through the writer of the node's kind, chosen once at its
// first use, and the rules iptables cannot express (spoof check,
// isolation, the localnet guard) with nftables. A call shares one
// netfilter socket among all of them.
type Backend struct {
	node node
	once sync.Once
	w    writer // the node kind's, chosen at the first use
	nft  bool   // iptables is iptables-nft: Usable asks nf_tables
	// dial opens the call's netfilter socket: netfilter.Dial, or a
	// Conn over nftfake in tests.
	dial func() (*netfilter.Conn, error)
}

// writer reads and writes the owner chains of table nat on one kind of
// node: legacy (iptables-restore, -S, -C, iptables-save) or nft (netlink).
type writer interface {
	// ensure makes the owner's chains of the family exactly w.chains.
	ensure(ctx context.Context, c *call, w wanted) error
	// remove deletes the owner's chains in both families, then what more
	// deletes, in one transaction where the writer can.
	remove(ctx context.Context, c *call, o fwapi.Owner, more func(*netfilter.Batch) error) error
	// check returns fwapi.ErrMissing when a rule or jump of want is not
	// in place.
	check(ctx context.Context, c *call, o fwapi.Owner, f family, want []natchain.Chain) error
	// gc deletes the chains with one of prefixes that kept lacks.
	gc(ctx context.Context, c *call, f family, prefixes []string, kept map[string]bool) error
	// mapped returns the host ports the owner's DNAT chain forwards.
	mapped(ctx context.Context, c *call, o fwapi.Owner, f family) ([]fwapi.PortMapping, error)
}

// wanted is what one family of an owner is to hold: its chains of table
// nat (natchain.Desired) and whether their rules carry user conditions
// (natchain.HasConditions), which only iptables-restore writes.
type wanted struct {
	o      fwapi.Owner
	f      family
	chains []natchain.Chain
	conds  bool
}

// New returns the iptables backend of this node: over netlink when
// iptables is iptables-nft, else with iptables-restore. It looks nothing
// up: the node's kind is read at the backend's first use, so that a call
// whose network is on nftables never looks for iptables on PATH.
func New() *Backend { return newOn(theNode) }

func newOn(n node) *Backend { return &Backend{node: n, dial: netfilter.Dial} }

// call starts what one Ensure, Remove, Check or GC shares.
func (b *Backend) call() *call { return &call{dial: b.dial} }

// writer returns the writer of the node's kind, choosing it at the first
// call.
func (b *Backend) writer() writer {
	b.once.Do(func() {
		b.nft = b.node.isNFT()
		b.w = newLegacy("")
		if b.nft {
			b.w = &nft{restore: newLegacy("")}
		}
	})
	return b.w
}

// Usable checks that iptables can be used here: the tools are installed
// and the kernel side answers.
// Backend selection calls it on every call of a configuration that names no
// backend, so it starts no process on almost every node (see usable).
func (b *Backend) Usable(ctx context.Context) error {
	b.writer()
	return b.node.usable(ctx, b.nft)
}

// Ensure writes the owner's chains and jumps, one transaction per family
// that has something to write, then the localnet guard and the owner's
// nftables chains.
func (b *Backend) Ensure(ctx context.Context, o fwapi.Owner, r fwapi.Rules) error {
	c := b.call()
	defer c.close()
	for _, f := range families {
		w := wanted{o: o, f: f, chains: natchain.Desired(o, r, f.v4), conds: natchain.HasConditions(r, f.v4)}
		if err := b.writer().ensure(ctx, c, w); err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
	}
	if r.NeedsLocalnetGuard() {
		conn, err := c.socket()
		if err == nil {
			err = nftmodel.EnsureGuard(conn)
		}
		if err != nil {
			return fmt.Errorf("%s: localnet guard: %w", o, err)
		}
	}
	chains, skels := nftables.BridgeChains(o, r)
	if len(chains) == 0 {
		return nil
	}
	conn, err := c.socket()
	if err != nil {
		return err
	}
	return nftmodel.Ensure(ctx, conn, o, chains, skels)
}

// Remove deletes the owner's chains and jumps, its nftables chains (spoof
// check, isolation) and the reference plugins' rules of the attachment:
// with iptables-nft in one netlink transaction, read again and retried
// when what it read vanished before the commit.
func (b *Backend) Remove(ctx context.Context, o fwapi.Owner) error {
	c := b.call()
	defer c.close()
	// What was read vanished before the commit (a reset of the node's
	// firewall in between): read again and retry.
	return nftmodel.RetryVanished(func() error {
		return b.writer().remove(ctx, c, o, func(batch *netfilter.Batch) error {
			conn, err := c.socket()
			if err != nil {
				return err
			}
			return nftmodel.Remove(conn, o, batch, func(batch *netfilter.Batch) error {
				return nftables.DeleteReference(conn, o, batch)
			})
		})
	})
}

// Check compares the owner's chains with the rules r needs, by the digest
// comment of each rule, checks the jumps, then the nftables chains.
func (b *Backend) Check(ctx context.Context, o fwapi.Owner, r fwapi.Rules) error {
	c := b.call()
	defer c.close()
	var err error
	for _, f := range families {
		if err = b.writer().check(ctx, c, o, f, natchain.Desired(o, r, f.v4)); err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
	}
	chains, _ := nftables.BridgeChains(o, r)
	if len(chains) == 0 {
		return nil
	}
	conn, err := c.socket()
	if err != nil {
		return err
	}
	return nftmodel.Check(conn, o, chains)
}
