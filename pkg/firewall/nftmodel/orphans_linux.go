package nftmodel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// This rare whole-table read uses google/nftables: it lists every map
// element of a table, which no per-call path needs, and the cost of its
// extra socket does not matter here.

// dropOrphanElems deletes, over netlink, the map elements of existing
// chains whose rules no longer say which elements they have (a chain
// flushed behind our back), so that the chains can be deleted and no
// element of theirs stays.
func dropOrphanElems(existing []Existing) error {
	var conn *nftables.Conn
	for _, e := range existing {
		if len(e.Comments) > 0 {
			continue
		}
		var err error
		if conn == nil {
			if conn, err = nftables.New(); err != nil {
				return types.Errorf(types.ErrIO, "netlink to nftables: %w", err)
			}
		}
		if err := dropElemsTo(conn, e); err != nil {
			return err
		}
	}
	if conn == nil {
		return nil
	}
	if err := conn.Flush(); err != nil {
		return types.Errorf(types.ErrIO, "deleting orphan map elements: %w", err)
	}
	return nil
}

// dropElemsTo queues the deletion of every element of e's table that
// jumps to e, or that names e in its comment (the elements of data maps
// and sets e is the ledger of).
func dropElemsTo(conn *nftables.Conn, e Existing) error {
	table := &nftables.Table{Name: e.Table.Name, Family: nftables.TableFamily(e.Table.Proto())}
	sets, err := conn.GetSets(table)
	if err != nil {
		return types.Errorf(types.ErrIO, "listing maps of %s: %w", e.Table, errnoOf(err))
	}
	for _, set := range sets {
		elems, err := conn.GetSetElements(set)
		if err != nil {
			return types.Errorf(types.ErrIO, "listing map %s: %w", set.Name, errnoOf(err))
		}
		var drop []nftables.SetElement
		for _, el := range elems {
			if netfilter.VerdictChain(el.Val) == e.Name || el.Comment == e.Name {
				drop = append(drop, nftables.SetElement{Key: el.Key, KeyEnd: el.KeyEnd})
			}
		}
		if len(drop) > 0 {
			if err := conn.SetDeleteElements(set, drop); err != nil {
				return types.Errorf(types.ErrIO, "deleting elements of %s: %w", set.Name, err)
			}
		}
	}
	return nil
}

// staleChains lists, on conn, the network's owner chains not belonging to
// kept owners.
func staleChains(conn *netfilter.Conn, plugin, network string, keep []fwapi.Owner) ([]Chain, error) {
	kept := map[string]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		for _, c := range OwnerChains(o) {
			kept[c.ID()] = true
		}
	}
	var out []Chain
	for _, t := range Tables {
		names, err := conn.Chains(t.Proto(), t.Name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		for _, name := range names {
			c := Chain{Table: t, Name: name}
			if isNetChain(name, plugin, network) && !kept[c.ID()] {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// errnoOf is err, which google/nftables' listings format with %v, losing
// the kernel's errno: a table or map that vanished (ENOENT) is marked as
// such again, so that the caller reads again (RetryVanished).
func errnoOf(err error) error {
	if !errors.Is(err, unix.ENOENT) && strings.HasSuffix(err.Error(), unix.ENOENT.Error()) {
		return fmt.Errorf("%w (%w)", err, unix.ENOENT)
	}
	return err
}
