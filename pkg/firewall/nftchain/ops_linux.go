package nftchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// NFT is the nft binary: it writes what only it can build (user conditions,
// spoof checks).
const NFT = "nft"

// Ensure makes the owner's chains exactly desired, with the skeletons of
// their tables, in one transaction: one netlink batch when every rule has a
// kernel form, else one `nft -f -` script. A map key held by another owner
// makes it fail with fwtypes.ErrConflict.
func Ensure(ctx context.Context, o fwtypes.Owner, desired []Chain, skels []Skeleton) error {
	if !Buildable(desired) {
		return ensureScript(ctx, o, desired, skels)
	}
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	existing, err := ReadChains(conn, OwnerChains(o))
	if err != nil {
		return err
	}
	for _, safe := range []bool{false, true} {
		batch := &netfilter.Batch{}
		if err = EnsureSkeletons(conn, batch, skels); err != nil {
			return err
		}
		EnsureBatch(batch, desired, existing, safe)
		if err = conn.Apply(batch); err == nil || IsConflict(err) {
			break
		}
	}
	if IsConflict(err) {
		return types.Errorf(fwtypes.ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
	}
	if err != nil {
		return types.Errorf(types.ErrIO, "%s: %w", o, err)
	}
	return nil
}

// EnsureGuard writes the localnet guard unless it is in place.
func EnsureGuard() error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	batch := &netfilter.Batch{}
	if err := EnsureSkeletons(conn, batch, []Skeleton{LocalnetGuard()}); err != nil {
		return err
	}
	if err := conn.Apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "localnet guard: %w", err)
	}
	return nil
}

// ensureScript is Ensure through nft -f -, for rules with user conditions
// or spoof checks, whose kernel form only nft builds.
func ensureScript(ctx context.Context, o fwtypes.Owner, desired []Chain, skels []Skeleton) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	existing, err := ReadChains(conn, OwnerChains(o))
	intact := map[Table]bool{} // non-nil: identical chains keep their rules
	for _, s := range skels {
		if err == nil {
			intact[s.Table], err = SkeletonIntact(conn, s)
		}
	}
	conn.Close()
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
			return types.Errorf(fwtypes.ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
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
func Remove(conn *netfilter.Conn, o fwtypes.Owner, extra *netfilter.Batch, also func(*netfilter.Batch) error) error {
	existing, err := ReadChains(conn, OwnerChains(o))
	if err != nil {
		return err
	}
	if err := dropOrphanElems(existing); err != nil {
		return err
	}
	all := &netfilter.Batch{}
	all.Append(extra)
	for _, e := range existing {
		RemoveChain(all, e, false)
	}
	alsoErr := also(all)
	if err := conn.Apply(all); err == nil {
		return alsoErr
	}
	safe := &netfilter.Batch{}
	for _, e := range existing {
		RemoveChain(safe, e, true)
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
	return errors.Join(errs...)
}

// Check compares the chains in the kernel with the desired ones.
func Check(o fwtypes.Owner, desired []Chain) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	existing, err := ReadChains(conn, refs(desired))
	if err != nil {
		return err
	}
	if err := compare(desired, existing); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// GC removes the network's owner chains, in every table of ours, whose
// owner is not kept.
func GC(plugin, network string, keep []fwtypes.Owner) error {
	stale, err := staleChains(plugin, network, keep)
	if err != nil {
		return err
	}
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	existing, err := ReadChains(conn, stale)
	if err != nil {
		return err
	}
	if err := dropOrphanElems(existing); err != nil {
		return err
	}
	batch := &netfilter.Batch{}
	for _, e := range existing {
		RemoveChain(batch, e, true)
	}
	if err := conn.Apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "GC of network %q: %w", network, err)
	}
	return nil
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
			return types.Errorf(fwtypes.ErrMissing, "chain %s %s is missing", c.Table, c.Name)
		}
		for _, r := range c.Rules {
			if got[r.Comment()] == 0 {
				return types.Errorf(fwtypes.ErrMissing, "rule %q is missing from chain %s %s", r.Text, c.Table, c.Name)
			}
			got[r.Comment()]--
		}
	}
	return nil
}
