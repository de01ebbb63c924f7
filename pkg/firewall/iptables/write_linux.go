package iptables

import (
	"bytes"
	"errors"
	"fmt"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/iptables/xtnft"
	"cnisuite/pkg/netfilter"
)

// With iptables-nft, Ensure writes the owner chains, their rules and the
// jumps into them over netlink, in one transaction per family, encoded as
// iptables-nft encodes the same rules (package xtnft): iptables-save,
// iptables -D and our own reads cannot tell them from what
// iptables-restore writes, and no process starts. iptables-restore stays
// the writer when the encoding does not cover the rules (user conditions),
// when table nat or a built-in chain the jumps need is missing (it creates
// them as iptables-nft does; later calls then go over netlink), and once
// after any failed transaction (say, a concurrent writer deleted a jump we
// meant to delete).

// errNoBase reports a missing table nat or built-in chain.
var errNoBase = errors.New("table nat or a built-in chain is missing")

func (t ipt) v4() bool { return t.cmd == "iptables" }

// ensureNL turns the family's owner chains read in st into the desired
// ones in one transaction: chains no longer needed lose their jumps and
// go; each desired chain is created, or flushed, and filled; jumps are
// added or deleted by difference.
func (t ipt) ensureNL(conn *netfilter.Conn, o fwtypes.Owner, desired []iptUnit, st familyNL) error {
	if err := t.haveParents(conn, desired); err != nil {
		return err
	}
	batch := &netfilter.Batch{}
	want := map[string]bool{}
	for _, u := range desired {
		want[u.chain] = true
	}
	for chain := range sortedChains(st.present) {
		if !want[chain] {
			t.dropJumps(batch, st.parents, chain, nil)
			batch.FlushChain(t.natTable(), chain)
			batch.DelChain(t.natTable(), chain)
		}
	}
	var kept []jump
	for _, u := range desired {
		k, err := t.writeUnit(batch, o, u, st)
		if err != nil {
			return err
		}
		kept = append(kept, k...)
	}
	echoed, err := conn.ApplyEcho(batch)
	if err != nil {
		return err
	}
	t.saveJumps(o, append(kept, echoedJumps(echoed, want)...))
	return nil
}

// haveParents checks that table nat and the built-in chains the desired
// chains' jumps go in exist. Equivalent to: nft list chain ip nat <parent>
func (t ipt) haveParents(conn *netfilter.Conn, desired []iptUnit) error {
	var chains []string
	for _, u := range desired {
		chains = append(chains, u.chain)
	}
	for _, p := range parentsOf(chains) {
		ok, err := conn.ChainExists(t.nfproto(), "nat", p)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w", p, errNoBase)
		}
	}
	return nil
}

// writeUnit adds to batch the writing of one owner chain and its jumps,
// and returns the jumps already in place that it keeps; the new ones are
// echoed back with their handles.
// Equivalent to: iptables-restore --noflush of ":<chain> - [0:0]", its
// rules and the missing jumps, then -D of the stale jumps.
func (t ipt) writeUnit(batch *netfilter.Batch, o fwtypes.Owner, u iptUnit, st familyNL) ([]jump, error) {
	tab := t.natTable()
	if _, had := st.present[u.chain]; had {
		batch.FlushChain(tab, u.chain)
	} else {
		batch.AddChain(tab, u.chain, nil)
		batch.FlushNew(tab, u.chain) // a concurrent twin may have filled it
	}
	for _, r := range u.rules {
		x, err := xtnft.Encode(splitSpec(r), t.v4())
		if err != nil {
			return nil, err
		}
		batch.AddXTRule(tab, u.chain, x.Exprs, x.Proto)
	}
	keep := map[uint64]bool{}
	var kept []jump
	for _, e := range iptEntries(o, u.chain, u.rules) {
		x, err := xtnft.Encode(splitSpec(e.spec), t.v4())
		if err != nil || e.insert {
			return nil, errors.Join(err, xtnft.ErrUnsupported)
		}
		if h, ok := t.findJump(st.parents[e.parent], x, keep); ok {
			keep[h] = true
			kept = append(kept, jump{parent: e.parent, handle: h})
			continue
		}
		batch.AddXTRuleEcho(tab, e.parent, x.Exprs, x.Proto)
	}
	t.dropJumps(batch, st.parents, u.chain, keep)
	return kept, nil
}

// findJump finds a jump that is the entry x (same comment, target and
// source), not yet taken by another entry.
func (t ipt) findJump(rules []netfilter.Rule, x xtnft.Rule, taken map[uint64]bool) (uint64, bool) {
	for _, r := range rules {
		if r.Jump == x.Jump && r.Comment == x.Comment && !taken[r.Handle] &&
			bytes.Equal(xtnft.DumpedSource(r.Exprs, t.v4()), x.Source) {
			return r.Handle, true
		}
	}
	return 0, false
}

// dropJumps deletes, by handle, the jumps into chain that keep lacks.
func (t ipt) dropJumps(batch *netfilter.Batch, parents parentRules, chain string, keep map[uint64]bool) {
	for _, p := range iptParents {
		for _, r := range parents[p] {
			if r.Jump == chain && !keep[r.Handle] {
				batch.DelRule(t.natTable(), p, r.Handle)
			}
		}
	}
}
