package nftmodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// NFT is the nft binary: it writes what only it can build (user conditions,
// spoof checks).
const NFT = "nft"

// Ensure makes the owner's chains exactly desired, with the skeletons of
// their tables, in one transaction: one netlink batch on conn when every
// rule has a kernel form, else one `nft -f -` script. A map key held by
// another owner makes it fail with fwapi.ErrConflict.
func Ensure(ctx context.Context, conn *netfilter.Conn, o fwapi.Owner, desired []Chain, skels []Skeleton) error {
	if !Buildable(desired) {
		return ensureScript(ctx, conn, o, desired, skels)
	}
	var err error
	for _, safe := range []bool{false, true} {
		// Read again before the second try: a network chain may have gone
		// with its network's last other owner.
		var existing []Existing
		if existing, err = ReadChains(conn, readList(o, desired)); err != nil {
			return err
		}
		batch := &netfilter.Batch{}
		if err = ensureSkeletons(conn, batch, skels); err != nil {
			return err
		}
		ensureBatch(batch, desired, existing, safe)
		if err = conn.Apply(batch); err == nil {
			break
		}
		if IsConflict(err) {
			// Try again only when the keys in the way were strays.
			if dropped, derr := dropStrays(conn, desired); derr != nil || !dropped {
				break
			}
		}
	}
	if IsConflict(err) {
		return types.Errorf(fwapi.ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
	}
	if err != nil {
		return types.Errorf(types.ErrIO, "%s: %w", o, err)
	}
	return nil
}

// dropStrays deletes the elements of data maps and sets that hold a key
// the desired chains need and that are in the way: an element whose
// comment names a ledger chain of ours that no longer exists (an operator
// deleted it, not its elements: no owner holds it, and it would refuse
// every later owner of the key), or one of the chain's own whose value
// another hand changed (the plain add that repairs it is refused). It
// reports whether it deleted any. An element of another existing chain, or
// without a comment of ours, stays: a conflict; so does one of the chain's
// own that is as it should be (a subnet chain's, which live owners share).
func dropStrays(conn *netfilter.Conn, desired []Chain) (bool, error) {
	batch := &netfilter.Batch{}
	for _, c := range desired {
		for _, el := range c.Elems() {
			if Maps[el.Set].Verdict() {
				continue
			}
			got, stray, err := isStray(conn, c, el)
			if err != nil {
				return false, err
			}
			if stray {
				batch.DelElemRange(c.Table, el.Set, got.Key, got.End)
			}
		}
	}
	if batch.Empty() {
		return false, nil
	}
	if err := conn.Apply(batch); err != nil {
		return false, types.Errorf(types.ErrIO, "deleting stray elements: %w", err)
	}
	return true, nil
}

// isStray reads the element holding el's key and reports whether it is a
// stray in the way of chain c (dropStrays).
func isStray(conn *netfilter.Conn, c Chain, el Elem) (netfilter.Elem, bool, error) {
	key, end, err := nftrule.ElemKeys(c.Table, el)
	if err != nil {
		return netfilter.Elem{}, false, err
	}
	data, err := nftrule.ElemData(c.Table, el)
	if err != nil {
		return netfilter.Elem{}, false, err
	}
	got, found, err := conn.GetElem(c.Table.Proto(), c.Table.Name, el.Set, key, end)
	if err != nil || !found || !isOwnerChain(got.Comment) {
		return got, false, nil
	}
	if got.Comment == c.Name {
		return got, !bytes.Equal(got.Data, data), nil // ours, holding another value
	}
	exists, err := conn.ChainExists(c.Table.Proto(), c.Table.Name, got.Comment)
	if err != nil {
		return got, false, types.Errorf(types.ErrIO, "%w", err)
	}
	return got, !exists, nil
}

// EnsureGuard writes the localnet guard unless it is in place.
func EnsureGuard(conn *netfilter.Conn) error {
	batch := &netfilter.Batch{}
	if err := ensureSkeletons(conn, batch, []Skeleton{LocalnetGuard()}); err != nil {
		return err
	}
	if err := conn.Apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "localnet guard: %w", err)
	}
	return nil
}

// ensureScript is Ensure through nft -f -, for rules with user conditions,
// whose kernel form only nft builds.
func ensureScript(ctx context.Context, conn *netfilter.Conn, o fwapi.Owner, desired []Chain, skels []Skeleton) error {
	err := ensureScriptOnce(ctx, conn, o, desired, skels)
	if err != nil && !errors.Is(err, fwapi.ErrConflict) {
		// A network chain may have gone with its network's last other
		// owner between our read and our write: read and write again.
		err = ensureScriptOnce(ctx, conn, o, desired, skels)
	}
	return err
}

func ensureScriptOnce(ctx context.Context, conn *netfilter.Conn, o fwapi.Owner, desired []Chain, skels []Skeleton) error {
	existing, err := ReadChains(conn, readList(o, desired))
	intact := map[Table]bool{} // non-nil: identical chains keep their rules
	for _, s := range skels {
		if err == nil {
			intact[s.Table], err = SkeletonIntact(conn, s)
		}
	}
	if err != nil {
		return err
	}
	script := Script(desired, existing, skels, intact)
	for _, s := range skels {
		if s.Table == LocalnetGuardTable && !intact[s.Table] {
			script += strings.Join(s.Lines(), "\n") + "\n"
		}
	}
	if err := RunScript(ctx, script); err != nil {
		if strings.Contains(err.Error(), "File exists") {
			return types.Errorf(fwapi.ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
		}
		return err
	}
	return nil
}

// Remove deletes every chain of the owner in our tables with the map
// elements leading to them, in one transaction on conn together with extra
// (another layer's deletions, already read) and what also adds (read on
// conn: the reference plugins' rules). When that fails (an element or a
// rule went away behind our back), it deletes the owner's chains in the
// safe form, then the rest again.
//
// Then it deletes the shared chains no owner holds any more (ReleaseShared):
// those the owner's chains jumped to (its subnets', its network's), and
// its network's chains, which an owner whose hold was deleted behind our
// back no longer names.
func Remove(conn *netfilter.Conn, o fwapi.Owner, extra *netfilter.Batch, also func(*netfilter.Batch) error) error {
	held, err := removeOwner(conn, o, extra, also)
	return errors.Join(err, ReleaseShared(conn, union(held, NetChains(o)), o.String()))
}

// union is the chains of a and b, each once, in their order.
func union(a, b []Chain) []Chain {
	seen := map[string]bool{}
	var out []Chain
	for _, c := range append(append([]Chain{}, a...), b...) {
		if !seen[c.ID()] {
			seen[c.ID()] = true
			out = append(out, c)
		}
	}
	return out
}

// readList is what Ensure reads: every chain the owner may have, and the
// shared chains it wants (network and subnet chains; never others: Ensure
// would delete them).
func readList(o fwapi.Owner, desired []Chain) []Chain {
	out := OwnerChains(o)
	own := map[string]bool{}
	for _, c := range out {
		own[c.ID()] = true
	}
	for _, c := range desired {
		if !own[c.ID()] {
			out = append(out, Chain{Table: c.Table, Name: c.Name})
		}
	}
	return out
}

// ReleaseShared deletes the shared chains (network or subnet chains) among
// chains, with their map elements, each in a transaction of its own that
// the kernel refuses (EBUSY) while any owner's chain still jumps to it:
// then it stays; or (ENOENT) when another owner's DEL, which also found it
// unheld, deleted it first: then it is gone. what names them in an error.
func ReleaseShared(conn *netfilter.Conn, chains []Chain, what string) error {
	existing, err := ReadChains(conn, chains)
	if err != nil || len(existing) == 0 {
		return err
	}
	for _, e := range existing {
		// The use count is the chain's rules plus what leads to it: its
		// verdict map elements, and the owners' jumps. Looked at first,
		// since a deleting transaction, even a failed one, costs the
		// socket's close a grace period.
		if int(e.Use) > len(e.Comments)+e.verdictElems() {
			continue // held by an owner
		}
		if err := dropOrphanElems(conn, []Existing{e}); err != nil { // flushed: its element is unnamed
			return err
		}
		batch := &netfilter.Batch{}
		removeChain(batch, e, true)
		if err := conn.Apply(batch); err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOENT) {
			return types.Errorf(types.ErrIO, "shared chain %s of %s: %w", e.ID(), what, err)
		}
	}
	return nil
}

// sharedHeld returns the shared chains existing (owner chains) hold: those
// they jump to; and, when one of them has no rule left (flushed behind our
// back, so nothing names what it jumped to), every subnet chain of its
// table, of which ReleaseShared deletes those no owner holds.
func sharedHeld(conn *netfilter.Conn, existing []Existing) ([]Chain, error) {
	held := jumpTargets(existing)
	listed := map[Table]bool{}
	for _, e := range existing {
		if len(e.Comments) > 0 || listed[e.Table] {
			continue
		}
		listed[e.Table] = true
		names, err := conn.Chains(e.Table.Proto(), e.Table.Name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		for _, n := range names {
			if isSubnetChain(n) {
				held = append(held, Chain{Table: e.Table, Name: n})
			}
		}
	}
	return held, nil
}

// jumpTargets are the chains the existing chains jump to, in their tables.
func jumpTargets(existing []Existing) []Chain {
	var out []Chain
	for _, e := range existing {
		for _, j := range e.Jumps {
			out = append(out, Chain{Table: e.Table, Name: j})
		}
	}
	return out
}

// removeOwner deletes the owner's chains and returns the chains they
// jumped to (subnet and network chains the owner held).
func removeOwner(conn *netfilter.Conn, o fwapi.Owner, extra *netfilter.Batch, also func(*netfilter.Batch) error) ([]Chain, error) {
	existing, err := ReadChains(conn, OwnerChains(o))
	if err != nil {
		return nil, err
	}
	held, err := sharedHeld(conn, existing)
	if err != nil {
		return nil, err
	}
	if err := dropOrphanElems(conn, existing); err != nil {
		return held, err
	}
	all := &netfilter.Batch{}
	all.Append(extra)
	for _, e := range existing {
		removeChain(all, e, false)
	}
	alsoErr := also(all)
	if err := conn.Apply(all); err == nil {
		return held, alsoErr
	}
	safe := &netfilter.Batch{}
	for _, e := range existing {
		removeChain(safe, e, true)
	}
	var errs []error
	if err := conn.Apply(safe); err != nil {
		errs = append(errs, types.Errorf(types.ErrIO, "%s: %w", o, err))
	}
	rest := &netfilter.Batch{}
	rest.Append(extra)
	errs = append(errs, also(rest))
	if err := conn.Apply(rest); err != nil {
		errs = append(errs, types.Errorf(types.ErrIO, "%s: %w", o, err))
	}
	return held, errors.Join(errs...)
}

// Check compares the chains in the kernel, read on conn, with the desired
// ones, and reads each element of a data map or set a ledger chain records
// (one request each): the fixed rules act on the elements alone.
func Check(conn *netfilter.Conn, o fwapi.Owner, desired []Chain) error {
	existing, err := ReadChains(conn, refs(desired))
	if err != nil {
		return err
	}
	if err := compare(desired, existing); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	for _, c := range desired {
		for _, el := range c.Elems() {
			if err := checkElem(conn, c, el); err != nil {
				return fmt.Errorf("%s: %w", o, err)
			}
		}
	}
	return nil
}

// checkElem reports an element of a data map or set that is missing, maps
// to another value, or is recorded by another chain.
func checkElem(conn *netfilter.Conn, c Chain, el Elem) error {
	if Maps[el.Set].Verdict() {
		return nil
	}
	key, end, err := nftrule.ElemKeys(c.Table, el)
	if err != nil {
		return err
	}
	data, err := nftrule.ElemData(c.Table, el)
	if err != nil {
		return err
	}
	got, found, err := conn.GetElem(c.Table.Proto(), c.Table.Name, el.Set, key, end)
	switch {
	case err != nil:
		return types.Errorf(types.ErrIO, "%w", err)
	case !found:
		return types.Errorf(fwapi.ErrMissing, "element %s of %s %s is missing", el.Key, c.Table, el.Set)
	case !bytes.Equal(got.Data, data):
		return types.Errorf(fwapi.ErrMissing, "element %s of %s %s does not map to %s", el.Key, c.Table, el.Set, el.Data)
	case got.Comment != c.Name:
		return types.Errorf(fwapi.ErrMissing, "element %s of %s %s is recorded by %q, not %s", el.Key, c.Table, el.Set, got.Comment, c.Name)
	}
	return nil
}

// GC removes, on conn, the network's owner chains, in every table of
// ours, whose owner is not kept.
func GC(conn *netfilter.Conn, plugin, network string, keep []fwapi.Owner) error {
	stale, err := staleChains(conn, plugin, network, keep)
	if err != nil {
		return err
	}
	existing, err := ReadChains(conn, stale)
	if err != nil {
		return err
	}
	if err := dropOrphanElems(conn, existing); err != nil {
		return err
	}
	batch := &netfilter.Batch{}
	for _, e := range existing {
		removeChain(batch, e, true)
	}
	held, err := sharedHeld(conn, existing)
	if err != nil {
		return err
	}
	if err := conn.Apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "GC of network %q: %w", network, err)
	}
	return ReleaseShared(conn, union(held, NetChains(fwapi.Owner{Plugin: plugin, Network: network})),
		fmt.Sprintf("network %q", network))
}

// RunScript applies a script as one transaction: nft -f -.
func RunScript(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, NFT, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "nft -f -: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

func refs(cs []Chain) []Chain {
	out := make([]Chain, len(cs))
	for i, c := range cs {
		out[i] = Chain{Table: c.Table, Name: c.Name}
	}
	return out
}

// compare reports the first desired rule missing from the kernel.
func compare(desired []Chain, existing []Existing) error {
	have := map[string]map[string]int{}
	for _, e := range existing {
		have[e.ID()] = map[string]int{}
		for _, c := range e.Comments {
			have[e.ID()][c]++
		}
	}
	for _, c := range desired {
		got, ok := have[c.ID()]
		if !ok {
			return types.Errorf(fwapi.ErrMissing, "chain %s %s is missing", c.Table, c.Name)
		}
		for _, r := range c.Rules {
			if got[r.Comment()] == 0 {
				return types.Errorf(fwapi.ErrMissing, "rule %q is missing from chain %s %s", r.Text, c.Table, c.Name)
			}
			got[r.Comment()]--
		}
	}
	return nil
}
