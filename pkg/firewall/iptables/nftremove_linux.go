package iptables

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// remove deletes the owner's chains in both families, every jump to them
// by handle, in one netlink transaction with what more adds (the owner's
// nftables chains, the reference plugins' rules). The jumps come from the
// owner's record when it tells the truth (jumps_linux.go); if the kernel
// refuses the transaction (a jump the record did not know keeps a chain
// in use), it reads them from a dump of the built-in chains and tries
// once more.
func (n *nft) remove(_ context.Context, c *call, o fwapi.Owner, more func(*netfilter.Batch) error) error {
	defer func() {
		for _, f := range families {
			forgetJumps(f, o)
		}
	}()
	conn, err := c.socket()
	if err != nil {
		return err
	}
	var errs []error
	for _, recorded := range []bool{true, false} {
		batch := &netfilter.Batch{}
		err := removeBatch(conn, o, batch, recorded)
		if err == nil {
			if err = more(batch); err == nil {
				return nil
			}
		}
		errs = append(errs, err)
	}
	return types.Errorf(types.ErrIO, "%s: %w", o, errors.Join(errs...))
}

// removeBatch adds to batch the deletion of the owner's chains that exist,
// in both families: the jumps, then the chains.
func removeBatch(conn *netfilter.Conn, o fwapi.Owner, batch *netfilter.Batch, recorded bool) error {
	for _, f := range families {
		present := map[string]bool{}
		for _, name := range natchain.OwnerChains(o) {
			ok, err := conn.ChainExists(f.proto(), "nat", name)
			if err != nil {
				return err
			}
			present[name] = ok
		}
		maps.DeleteFunc(present, func(_ string, ok bool) bool { return !ok })
		if len(present) == 0 {
			continue
		}
		jumps, known, err := []jump(nil), false, error(nil)
		if recorded {
			if jumps, known, err = knownJumps(conn, f, o, present); err != nil {
				return err
			}
		}
		if !known {
			if jumps, err = dumpedJumps(conn, f, present); err != nil {
				return err
			}
		}
		for _, j := range jumps {
			batch.DelRule(f.table(), j.parent, j.handle)
		}
		names := slices.Sorted(maps.Keys(present))
		for _, name := range names {
			batch.FlushChain(f.table(), name)
		}
		for _, name := range names {
			batch.DelChain(f.table(), name)
		}
	}
	return nil
}

// dumpedJumps finds the jumps into the present chains in a dump of the
// built-in chains.
func dumpedJumps(conn *netfilter.Conn, f family, present map[string]bool) ([]jump, error) {
	parents, err := dumpParents(conn, f, slices.Sorted(maps.Keys(present)))
	if err != nil {
		return nil, err
	}
	var out []jump
	for _, p := range natchain.Parents {
		for _, r := range parents[p] {
			if present[r.Jump] {
				out = append(out, jump{parent: p, handle: r.Handle})
			}
		}
	}
	return out, nil
}

// check compares the owner's chains with the wanted ones, over netlink.
// The jumps into a chain are counted by its use count (its rules plus
// what leads to it; only our jumps do), so nothing that grows with the
// number of attachments is read.
func (n *nft) check(_ context.Context, c *call, o fwapi.Owner, f family, want []natchain.Chain) error {
	conn, err := c.socket()
	if err != nil {
		return err
	}
	for _, ch := range want {
		ok, use, err := conn.ChainUse(f.proto(), "nat", ch.Name)
		if err != nil {
			return types.Errorf(types.ErrIO, "%w", err)
		}
		if !ok {
			return types.Errorf(fwapi.ErrMissing, "%s chain %s is missing", f, ch.Name)
		}
		rules, err := conn.Rules(f.proto(), "nat", ch.Name)
		if err != nil {
			return types.Errorf(types.ErrIO, "%w", err)
		}
		have := map[string]int{}
		for _, r := range rules {
			have[r.Comment]++
		}
		if err := missingRule(f.String(), ch, have); err != nil {
			return err
		}
		refs := int(use) - len(rules)
		if jumps := natchain.ChainJumps(o, ch); refs < len(jumps) {
			return types.Errorf(fwapi.ErrMissing, "%s: %d of the %d jumps into chain %s are missing (%q in %s)",
				f, len(jumps)-refs, len(jumps), ch.Name, jumps[0].Rule.String(), jumps[0].Parent)
		}
	}
	return nil
}

// gc deletes the family's stale chains (one of prefixes, not kept) and
// the jumps into them in one netlink transaction; iptables-save and
// iptables-restore only when that fails and there is a restore writer.
func (n *nft) gc(ctx context.Context, c *call, f family, prefixes []string, kept map[string]bool) error {
	nlErr := gcNL(c, f, prefixes, kept)
	if nlErr == nil {
		return nil
	}
	if n.restore == nil {
		return types.Errorf(types.ErrIO, "%w (%w)", errNoFallback, nlErr)
	}
	return errors.Join(nlErr, n.restore.gc(ctx, c, f, prefixes, kept))
}

// gcNL is gc over netlink: the chains of the nat table, the jumps into the
// stale ones from a dump of the built-in chains, one transaction.
func gcNL(c *call, f family, prefixes []string, kept map[string]bool) error {
	conn, err := c.socket()
	if err != nil {
		return err
	}
	names, err := conn.Chains(f.proto(), "nat")
	if err != nil {
		return err
	}
	sorted := natchain.Stale(names, prefixes, kept)
	if len(sorted) == 0 {
		return nil
	}
	stale := map[string]bool{}
	for _, name := range sorted {
		stale[name] = true
	}
	jumps, err := dumpedJumps(conn, f, stale)
	if err != nil {
		return err
	}
	batch := &netfilter.Batch{}
	for _, j := range jumps {
		batch.DelRule(f.table(), j.parent, j.handle)
	}
	for _, name := range sorted { // flushed first: one may jump to another
		batch.FlushChain(f.table(), name)
	}
	for _, name := range sorted {
		batch.DelChain(f.table(), name)
	}
	if err := conn.Apply(batch); err != nil {
		return fmt.Errorf("%s: deleting stale chains %v: %w", f, sorted, err)
	}
	for _, name := range sorted {
		forgetChainJumps(f, name)
	}
	return nil
}

// mapped reads the owner's DNAT rules over netlink (natchain.DumpedDNAT).
func (n *nft) mapped(_ context.Context, c *call, o fwapi.Owner, f family) ([]fwapi.PortMapping, error) {
	conn, err := c.socket()
	if err != nil {
		return nil, err
	}
	name := natchain.ChainName(natchain.PrefixDNAT, o)
	if ok, err := conn.ChainExists(f.proto(), "nat", name); err != nil || !ok {
		return nil, err
	}
	rules, err := conn.Rules(f.proto(), "nat", name)
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	var out []fwapi.PortMapping
	for _, r := range rules {
		if m, ok := natchain.DumpedDNAT(r.Exprs, f.v4); ok {
			pm := fwapi.PortMapping{HostPort: m.Port, Protocol: m.Protocol, HostIP: m.Host}
			if m.Last > m.Port {
				pm.Range = m.Last - m.Port + 1
			}
			out = append(out, pm)
		}
	}
	return out, nil
}
