package nftmodel

import (
	"maps"
	"slices"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// dropOrphanElems deletes, on conn, the map elements of existing chains
// whose rules no longer say which elements they have (a chain flushed
// behind our back), so that the chains can be deleted and no element of
// theirs stays: every element of a map of ours in the chain's table that
// jumps to the chain, or names it in its comment (the elements of data
// maps and sets it is the ledger of). One dump per map of ours, for each
// such chain: a rare path, which no call that finds its rules takes.
func dropOrphanElems(conn *netfilter.Conn, existing []Existing) error {
	batch := &netfilter.Batch{}
	for _, e := range existing {
		if len(e.Comments) > 0 {
			continue
		}
		for _, set := range slices.Sorted(maps.Keys(Maps)) {
			elems, err := conn.MapElems(e.Table.Proto(), e.Table.Name, set) // none when the table has no such map
			if err != nil {
				return types.Errorf(types.ErrIO, "%w", err)
			}
			for _, el := range elems {
				if el.Chain == e.Name || el.Comment == e.Name {
					batch.DelElemRange(e.Table, set, el.Key, el.End)
				}
			}
		}
	}
	if batch.Empty() {
		return nil
	}
	if err := conn.Apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "deleting orphan map elements: %w", err)
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
