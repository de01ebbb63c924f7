package nftmodel

import (
	"errors"
	"reflect"
	"slices"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// ReadChains returns the chains that exist among the named ones, with the
// comments of their rules and their use counts: one datagram of lookups,
// one dump per existing chain, whatever the number of attachments on the
// node.
func ReadChains(conn *netfilter.Conn, chains []Chain) ([]Existing, error) {
	refs := make([]netfilter.ChainRef, len(chains))
	for i, c := range chains {
		refs[i] = netfilter.ChainRef{Family: c.Table.Proto(), Table: c.Table.Name, Chain: c.Name}
	}
	found, uses, err := conn.ChainUses(refs)
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	var out []Existing
	for i, c := range chains {
		if !found[i] {
			continue
		}
		fam, use := c.Table.Proto(), uses[i]
		rules, err := conn.Rules(fam, c.Table.Name, c.Name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		e := Existing{Table: c.Table, Name: c.Name, Use: use}
		for _, r := range rules {
			e.Comments = append(e.Comments, r.Comment)
			if r.Jump != "" {
				e.Jumps = append(e.Jumps, r.Jump)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// SkeletonIntact reports whether every fixed chain of the skeleton holds
// exactly its fixed rules, expression by expression, whoever wrote them
// (over netlink, or nft -f -). A missing table or chain reads as no rules.
func SkeletonIntact(conn *netfilter.Conn, s Skeleton) (bool, error) {
	intact, _, err := readSkeleton(conn, s)
	return intact, err
}

// readSkeleton is SkeletonIntact that also reports whether any fixed
// chain holds rules (which rewriting the skeleton would delete).
func readSkeleton(conn *netfilter.Conn, s Skeleton) (intact, hasRules bool, err error) {
	fam := s.Table.Proto()
	intact = true
	for _, c := range s.Chains {
		rules, err := conn.Rules(fam, s.Table.Name, c.Name)
		if err != nil {
			return false, false, types.Errorf(types.ErrIO, "%w", err)
		}
		hasRules = hasRules || len(rules) > 0
		if len(rules) != len(c.Rules) {
			intact = false
			continue
		}
		for i, r := range rules {
			got, ok := netfilter.ParseExprs(fam, r.Exprs)
			if !ok || !reflect.DeepEqual(got, c.Rules[i].Exprs) {
				intact = false
			}
		}
	}
	return intact, hasRules, nil
}

// writeSkeleton is Skeleton.Lines over netlink; rewrite says whether the
// fixed chains may hold rules already.
func writeSkeleton(b *netfilter.Batch, s Skeleton, rewrite bool) {
	b.AddTable(s.Table)
	for _, m := range s.Maps {
		b.AddSet(s.Table, m.Spec(s.Table))
	}
	for _, c := range s.Chains {
		var h *netfilter.Hook
		if c.Hook != nil {
			h = &c.Hook.Hook
		}
		b.AddChain(s.Table, c.Name, h)
	}
	for _, c := range s.Chains {
		if rewrite {
			b.FlushChain(s.Table, c.Name)
		} else {
			b.FlushNew(s.Table, c.Name)
		}
		for _, r := range c.Rules {
			addRule(b, s.Table, c.Name, r, true)
		}
	}
}

// ensureSkeletons adds to the batch the skeletons that are not intact.
func ensureSkeletons(conn *netfilter.Conn, b *netfilter.Batch, skels []Skeleton) error {
	for _, s := range skels {
		ok, hasRules, err := readSkeleton(conn, s)
		if err != nil {
			return err
		}
		if !ok {
			writeSkeleton(b, s, hasRules)
		}
	}
	return nil
}

// ensureBatch is Script over netlink, without the skeletons. A chain
// already holding exactly the desired rules is left as it is, so an ADD
// repeated, or a fresh ADD, deletes nothing. With safe, each stale map
// element is re-added before it is deleted, so that one deleted behind our
// back does not fail the transaction.
func ensureBatch(b *netfilter.Batch, desired []Chain, existing []Existing, safe bool) {
	want := map[string]Chain{}
	for _, c := range desired {
		want[c.ID()] = c
	}
	have := map[string]Existing{}
	for _, e := range existing {
		have[e.ID()] = e
		if _, ok := want[e.ID()]; !ok {
			removeChain(b, e, safe)
		}
	}
	for _, c := range desired {
		e, had := have[c.ID()]
		if !had || !slices.Equal(e.Comments, c.Comments()) {
			b.AddChain(c.Table, c.Name, nil)
			if had {
				b.FlushChain(c.Table, c.Name)
			} else {
				b.FlushNew(c.Table, c.Name)
			}
			for _, r := range c.Rules {
				addRule(b, c.Table, c.Name, r, false)
			}
		}
		keep := map[Elem]bool{}
		for _, el := range c.Elems() {
			keep[el] = true
		}
		for _, el := range e.Elems() {
			if !keep[el] {
				removeElem(b, e.Table, e.Name, el, safe)
			}
		}
		for _, el := range c.Elems() {
			addElem(b, c.Table, el, c.Name, !had && exclusive(c.Name))
		}
	}
}

// addRule: add rule <t> <chain> <rule text> comment "<comment>"; a fixed
// rule of a skeleton has no comment.
func addRule(b *netfilter.Batch, t Table, chain string, r Rule, fixed bool) {
	comment := r.Comment()
	if fixed {
		comment = ""
	}
	b.AddRule(t, chain, addSets(b, t, r), comment)
}

// addSets adds the rule's anonymous sets to b and returns its expressions
// with each nftrule.Lookup naming the set it stands for.
func addSets(b *netfilter.Batch, t Table, r Rule) []expr.Any {
	if len(r.Sets) == 0 {
		return r.Exprs
	}
	ids := make([]uint32, len(r.Sets))
	for i, s := range r.Sets {
		set, err := s.Kernel()
		if err != nil {
			b.Fail(err)
			return nil
		}
		ids[i] = b.AddAnonSet(t, set)
	}
	out := slices.Clone(r.Exprs)
	for i, e := range out {
		if l, ok := e.(*expr.Lookup); ok && l.SetName == "" {
			out[i] = &expr.Lookup{SourceRegister: l.SourceRegister, SetName: netfilter.AnonSetName, SetID: ids[l.SetID], Invert: l.Invert}
		}
	}
	return out
}

// addElem: add element <t> <set> { <key> : jump <chain> } in a verdict
// map; add element <t> <set> { <key> comment "<chain>" [: <data>] } in a
// set or data map, as create element when fresh (the owner had no chain):
// in a set the kernel would otherwise take another owner's key silently.
func addElem(b *netfilter.Batch, t Table, el Elem, chain string, fresh bool) {
	key, end, err := nftrule.ElemKeys(t, el)
	if err != nil {
		b.Fail(err)
		return
	}
	if Maps[el.Set].Verdict() {
		b.AddElemRange(t, el.Set, key, end, chain)
		return
	}
	data, err := nftrule.ElemData(t, el)
	if err != nil {
		b.Fail(err)
		return
	}
	b.AddSetElem(t, el.Set, netfilter.Elem{Key: key, End: end, Data: data, Comment: chain}, fresh)
}

func removeElem(b *netfilter.Batch, t Table, chain string, el Elem, safe bool) {
	if safe {
		addElem(b, t, el, chain, false)
	}
	key, end, err := nftrule.ElemKeys(t, el)
	if err != nil {
		b.Fail(err)
		return
	}
	b.DelElemRange(t, el.Set, key, end)
}

// removeChain deletes an owner chain and the map elements leading to it.
func removeChain(b *netfilter.Batch, e Existing, safe bool) {
	for _, el := range e.Elems() {
		removeElem(b, e.Table, e.Name, el, safe)
	}
	b.FlushChain(e.Table, e.Name)
	b.DelChain(e.Table, e.Name)
}

// IsConflict reports whether a transaction failed because a map element
// exists with another verdict (another owner's).
func IsConflict(err error) bool { return errors.Is(err, unix.EEXIST) }
