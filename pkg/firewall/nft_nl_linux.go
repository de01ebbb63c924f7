package firewall

import (
	"errors"
	"reflect"
	"slices"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

// buildable reports whether every rule of the chains has a kernel form, so
// that the call can go over netlink instead of `nft -f -`.
func buildable(chains []nftChain) bool {
	for _, c := range chains {
		for _, r := range c.rules {
			if r.exprs == nil {
				return false
			}
		}
	}
	return true
}

// readChains returns the chains that exist among the named ones, with the
// comments of their rules: one lookup per chain, one dump per existing
// chain, whatever the number of attachments on the node.
func (n *nlConn) readChains(chains []nftChain) ([]nftExisting, error) {
	var out []nftExisting
	for _, c := range chains {
		fam := byte(familyOf[c.table.family])
		ok, err := n.chainExists(fam, c.table.name, c.name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		if !ok {
			continue
		}
		rules, err := n.rules(fam, c.table.name, c.name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		e := nftExisting{table: c.table, name: c.name}
		for _, r := range rules {
			e.comments = append(e.comments, r.comment)
		}
		out = append(out, e)
	}
	return out, nil
}

// skeletonIntact reports whether every fixed chain of the skeleton holds
// exactly its fixed rules, expression by expression, whoever wrote them
// (this backend over netlink, or nft -f -). A missing table or chain
// reads as no rules.
func (n *nlConn) skeletonIntact(s nftSkel) (bool, error) {
	intact, _, err := n.readSkeleton(s)
	return intact, err
}

// readSkeleton is skeletonIntact that also reports whether any fixed
// chain holds rules (which rewriting the skeleton would delete).
func (n *nlConn) readSkeleton(s nftSkel) (intact, hasRules bool, err error) {
	fam := byte(familyOf[s.table.family])
	intact = true
	for _, c := range s.chains {
		rules, err := n.rules(fam, s.table.name, c.name)
		if err != nil {
			return false, false, types.Errorf(types.ErrIO, "%w", err)
		}
		hasRules = hasRules || len(rules) > 0
		if len(rules) != len(c.rules) {
			intact = false
			continue
		}
		for i, r := range rules {
			got, ok := parseExprs(fam, r.exprs)
			if !ok || !reflect.DeepEqual(got, c.rules[i].exprs) {
				intact = false
			}
		}
	}
	return intact, hasRules, nil
}

// writeSkeleton is nftSkel.lines over netlink; rewrite says whether the
// fixed chains may hold rules already.
func (b *nlBatch) writeSkeleton(s nftSkel, rewrite bool) {
	b.addTable(s.table)
	for _, m := range s.maps {
		b.addMap(s.table, m)
	}
	for _, c := range s.chains {
		b.addChain(s.table, c.name, c.hook)
	}
	for _, c := range s.chains {
		if rewrite {
			b.flushChain(s.table, c.name)
		} else {
			b.flushNew(s.table, c.name)
		}
		for _, r := range c.rules {
			b.addRule(s.table, c.name, r, true)
		}
	}
}

// ensureSkeletons adds to the batch the skeletons that are not intact.
func (n *nlConn) ensureSkeletons(b *nlBatch, skels []nftSkel) error {
	for _, s := range skels {
		ok, hasRules, err := n.readSkeleton(s)
		if err != nil {
			return err
		}
		if !ok {
			b.writeSkeleton(s, hasRules)
		}
	}
	return nil
}

// ensureBatch is nftEnsureScript over netlink, without the skeletons. A
// chain already holding exactly the desired rules is left as it is, so an
// ADD repeated, or a fresh ADD, deletes nothing. With safe, each stale map
// element is re-added before it is deleted, so that one deleted behind our
// back does not fail the transaction.
func (b *nlBatch) ensureBatch(desired []nftChain, existing []nftExisting, safe bool) {
	want := map[string]nftChain{}
	for _, c := range desired {
		want[c.id()] = c
	}
	have := map[string]nftExisting{}
	for _, e := range existing {
		have[e.id()] = e
		if _, ok := want[e.id()]; !ok {
			b.removeChain(e, safe)
		}
	}
	for _, c := range desired {
		e, had := have[c.id()]
		if !had || !slices.Equal(e.comments, c.comments()) {
			b.addChain(c.table, c.name, nil)
			if had {
				b.flushChain(c.table, c.name)
			} else {
				b.flushNew(c.table, c.name)
			}
			for _, r := range c.rules {
				b.addRule(c.table, c.name, r, false)
			}
		}
		keep := map[nftElem]bool{}
		for _, el := range c.elems() {
			keep[el] = true
		}
		for _, el := range e.elems() {
			if !keep[el] {
				b.removeElem(e.table, e.name, el, safe)
			}
		}
		for _, el := range c.elems() {
			b.addElem(c.table, el, c.name)
		}
	}
}

func (b *nlBatch) removeElem(t nftTable, chain string, el nftElem, safe bool) {
	if safe {
		b.addElem(t, el, chain)
	}
	b.delElem(t, el)
}

// removeChain deletes an owner chain and the map elements leading to it.
func (b *nlBatch) removeChain(e nftExisting, safe bool) {
	for _, el := range e.elems() {
		b.removeElem(e.table, e.name, el, safe)
	}
	b.flushChain(e.table, e.name)
	b.delChain(e.table, e.name)
}

// isConflict reports whether a transaction failed because a map element
// exists with another verdict (another owner's).
func isConflict(err error) bool { return errors.Is(err, unix.EEXIST) }
