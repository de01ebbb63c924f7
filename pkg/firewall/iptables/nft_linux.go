package iptables

import (
	"context"
	"errors"
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// nft is the writer of an iptables-nft node, where iptables chains are
// nftables chains of the tables ip nat and ip6 nat. It reads over netlink
// (the owner's own chains, whose use counts tell Check their jumps are
// there; the built-in chains only when it must find the jumps), writes
// over netlink in one transaction per family, encoded as iptables-nft
// 1.8.9 encodes the same tokens (natchain.Encode), so iptables-save, -D and
// -S see what iptables-restore would have written, and deletes by rule
// handle. No process starts.
//
// It makes table nat and the built-in chains the jumps need, when missing,
// as iptables-nft does. restore, with the iptables-nft tools, writes what
// netlink does not: user conditions (free-form iptables arguments), and a
// write whose transaction failed (a concurrent writer deleted a jump we
// meant to delete). GC reads with its tools too. A nil restore writes over
// netlink only.
type nft struct{ restore *legacy }

// errNoFallback is returned when netlink cannot write and there is no
// restore writer to fall back on.
var errNoFallback = errors.New("no iptables-restore fallback")

func (n *nft) ensure(ctx context.Context, c *call, w wanted) error {
	conn, err := c.socket()
	if err != nil {
		return err
	}
	st, err := readFamily(conn, w.o, w.f)
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	if st.holds(w.o, w.chains) {
		return nil
	}
	var nlErr error
	if !w.conds {
		if nlErr = ensureNL(conn, w.o, w.f, w.chains, st); nlErr == nil {
			return nil
		}
	}
	if n.restore == nil {
		return types.Errorf(types.ErrIO, "%w (%w)", errNoFallback, nlErr)
	}
	forgetJumps(w.f, w.o) // iptables-restore does not say which handles it gave
	if err := n.restore.ensureFamily(ctx, w.o, w.f, w.chains, len(st.present) > 0); err != nil {
		return errors.Join(nlErr, err)
	}
	return nil
}

// familyNL is what Ensure read of a family over netlink: the owner chains
// present (with their rules' comments) and, when there are any, the
// built-in chains that may jump to them.
type familyNL struct {
	present map[string][]string
	parents parentRules
}

// parentRules holds the built-in chains a call dumped: each holds one
// jump per attachment, so they are the one read that grows with the node.
type parentRules map[string][]netfilter.Rule

// readFamily reads the owner's chains in the family, with their rules'
// comments, and the built-in chains when any of them exists.
func readFamily(conn *netfilter.Conn, o fwapi.Owner, f family) (st familyNL, err error) {
	st.present = map[string][]string{}
	for _, name := range natchain.OwnerChains(o) {
		ok, err := conn.ChainExists(f.proto(), "nat", name)
		if err != nil || !ok {
			if err != nil {
				return st, err
			}
			continue
		}
		rules, err := conn.Rules(f.proto(), "nat", name)
		if err != nil {
			return st, err
		}
		comments := []string{}
		for _, r := range rules {
			comments = append(comments, r.Comment)
		}
		st.present[name] = comments
	}
	if len(st.present) > 0 {
		st.parents, err = dumpParents(conn, f, slices.Sorted(maps.Keys(st.present)))
	}
	return st, err
}

func dumpParents(conn *netfilter.Conn, f family, chains []string) (parentRules, error) {
	out := parentRules{}
	for _, p := range natchain.ParentsOf(chains) {
		rules, err := conn.Rules(f.proto(), "nat", p)
		if err != nil {
			return nil, err
		}
		out[p] = rules
	}
	return out, nil
}

// holds reports whether the family holds exactly the wanted owner chains
// (by their rules' digest comments) and their jumps (by tag and target):
// then Ensure has nothing to write.
func (st familyNL) holds(o fwapi.Owner, want []natchain.Chain) bool {
	if len(st.present) != len(want) {
		return false
	}
	for _, c := range want {
		got, ok := st.present[c.Name]
		if !ok || len(got) != len(c.Rules) {
			return false
		}
		for i, r := range c.Rules {
			if got[i] != r.Comment() {
				return false
			}
		}
		for _, j := range natchain.ChainJumps(o, c) {
			if !slices.ContainsFunc(st.parents[j.Parent], func(r netfilter.Rule) bool {
				return r.Comment == j.Rule.Comment() && r.Jump == c.Name
			}) {
				return false
			}
		}
	}
	return true
}

// ensureNL turns the family's owner chains read in st into the wanted
// ones in one transaction: chains no longer wanted lose their jumps and
// go; each wanted chain is created, or flushed, and filled; jumps are
// added or deleted by difference. It records the jumps' handles.
func ensureNL(conn *netfilter.Conn, o fwapi.Owner, f family, want []natchain.Chain, st familyNL) error {
	batch := &netfilter.Batch{}
	if err := ensureParents(conn, batch, f, want); err != nil {
		return err
	}
	wanted := map[string]bool{}
	for _, c := range want {
		wanted[c.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(st.present)) {
		if !wanted[name] {
			dropJumps(batch, f, st.parents, name, nil)
			batch.FlushChain(f.table(), name)
			batch.DelChain(f.table(), name)
		}
	}
	var kept []jump
	for _, c := range want {
		k, err := writeChain(batch, o, f, c, st)
		if err != nil {
			return err
		}
		kept = append(kept, k...)
	}
	echoed, err := conn.ApplyEcho(batch)
	if err != nil {
		return err
	}
	saveJumps(f, o, append(kept, echoedJumps(echoed, wanted)...))
	return nil
}

// builtins are the hooks of table nat's built-in chains that hold jumps,
// as iptables-nft makes them: type nat, policy accept, priority dstnat
// (-100) or srcnat (100).
var builtins = map[string]netfilter.Hook{
	"PREROUTING":  {Type: "nat", Num: unix.NF_INET_PRE_ROUTING, Prio: -100},
	"OUTPUT":      {Type: "nat", Num: unix.NF_INET_LOCAL_OUT, Prio: -100},
	"POSTROUTING": {Type: "nat", Num: unix.NF_INET_POST_ROUTING, Prio: 100},
}

// ensureParents adds to batch table nat and the built-in chains the wanted
// chains' jumps go in, those that do not exist yet, as iptables-restore
// makes them on an iptables-nft node (only the chains it needs).
// Equivalent to: nft add table ip nat; nft add chain ip nat POSTROUTING
// '{ type nat hook postrouting priority srcnat; policy accept; }'
func ensureParents(conn *netfilter.Conn, batch *netfilter.Batch, f family, want []natchain.Chain) error {
	var names []string
	for _, c := range want {
		names = append(names, c.Name)
	}
	table := false
	for _, p := range natchain.ParentsOf(names) {
		ok, err := conn.ChainExists(f.proto(), "nat", p)
		if err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if !table {
			batch.AddTable(f.table())
			table = true
		}
		h := builtins[p]
		batch.AddChain(f.table(), p, &h)
	}
	return nil
}

// writeChain adds to batch the writing of one owner chain and its jumps,
// and returns the jumps already in place that it keeps; the new ones are
// echoed back with their handles.
// Equivalent to: iptables-restore --noflush of ":<chain> - [0:0]", its
// rules and the missing jumps, then -D of the stale jumps.
func writeChain(batch *netfilter.Batch, o fwapi.Owner, f family, c natchain.Chain, st familyNL) ([]jump, error) {
	tab := f.table()
	if _, had := st.present[c.Name]; had {
		batch.FlushChain(tab, c.Name)
	} else {
		batch.AddChain(tab, c.Name, nil)
		batch.FlushNew(tab, c.Name) // a concurrent twin may have filled it
	}
	for _, r := range c.Rules {
		x, err := natchain.Encode(r, f.v4)
		if err != nil {
			return nil, err
		}
		batch.AddXTRule(tab, c.Name, x.Exprs, x.Proto)
	}
	keep := map[uint64]bool{}
	var kept []jump
	for _, j := range natchain.ChainJumps(o, c) {
		x, err := natchain.Encode(j.Rule, f.v4)
		if err != nil {
			return nil, err
		}
		if h, ok := findJump(st.parents[j.Parent], x, f, keep); ok {
			keep[h] = true
			kept = append(kept, jump{parent: j.Parent, handle: h})
			continue
		}
		batch.AddXTRuleEcho(tab, j.Parent, x.Exprs, x.Proto)
	}
	dropJumps(batch, f, st.parents, c.Name, keep)
	return kept, nil
}

// findJump finds a jump that is x (same comment, target and source), not
// yet taken by another.
func findJump(rules []netfilter.Rule, x natchain.Encoded, f family, taken map[uint64]bool) (uint64, bool) {
	for _, r := range rules {
		if r.Jump == x.Jump && r.Comment == x.Comment && !taken[r.Handle] &&
			string(natchain.DumpedSource(r.Exprs, f.v4)) == string(x.Source) {
			return r.Handle, true
		}
	}
	return 0, false
}

// dropJumps deletes, by handle, the jumps into chain that keep lacks.
func dropJumps(batch *netfilter.Batch, f family, parents parentRules, chain string, keep map[uint64]bool) {
	for _, p := range natchain.Parents {
		for _, r := range parents[p] {
			if r.Jump == chain && !keep[r.Handle] {
				batch.DelRule(f.table(), p, r.Handle)
			}
		}
	}
}
