package iptables

import (
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/netfilter"
)

// With iptables-nft, iptables chains are nftables chains of the tables
// ip nat and ip6 nat, and rules carry their "-m comment" text in an xt
// match. The backend then reads them over netlink (no iptables -S fork,
// nothing that translates every rule of a built-in chain) and deletes by
// rule handle; it writes over netlink too, as iptables-nft encodes the
// rules (write_linux.go), so that iptables -S prints them back.

// natTable returns the nftables table behind the family's nat table.
func (t ipt) natTable() netfilter.Table {
	if t.cmd == "ip6tables" {
		return netfilter.Table{Family: "ip6", Name: "nat"}
	}
	return netfilter.Table{Family: "ip", Name: "nat"}
}

func (t ipt) nfproto() byte {
	if t.cmd == "ip6tables" {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// existingNL returns the chains among names that exist in the family's nat
// table (each with no rules listed): what removal needs to know.
func (t ipt) existingNL(conn *netfilter.Conn, names []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range names {
		ok, err := conn.ChainExists(t.nfproto(), "nat", c)
		if err != nil {
			return nil, err
		}
		if ok {
			out[c] = nil
		}
	}
	return out, nil
}

// presentNL returns the chains among names that exist in the family's nat
// table, with the comments of their rules.
func (t ipt) presentNL(conn *netfilter.Conn, names []string) (map[string][]string, error) {
	out, err := t.existingNL(conn, names)
	if err != nil {
		return nil, err
	}
	for c := range out {
		rules, err := conn.Rules(t.nfproto(), "nat", c)
		if err != nil {
			return nil, err
		}
		comments := []string{}
		for _, r := range rules {
			comments = append(comments, r.Comment)
		}
		out[c] = comments
	}
	return out, nil
}

// iptParents are the built-in chains that jump to owner chains.
var iptParents = []string{"PREROUTING", "OUTPUT", "POSTROUTING"}

// parentsOf returns the built-in chains holding the jumps to the chains.
func parentsOf(chains []string) []string {
	need := map[string]bool{}
	for _, c := range chains {
		if strings.HasPrefix(c, PrefixDNAT) {
			need["PREROUTING"], need["OUTPUT"] = true, true
		} else {
			need["POSTROUTING"] = true
		}
	}
	var out []string
	for _, p := range iptParents {
		if need[p] {
			out = append(out, p)
		}
	}
	return out
}

// parentRules holds the built-in chains a call dumped: each holds one
// jump per attachment, so they are the one read that grows with the node.
type parentRules map[string][]netfilter.Rule

func (t ipt) parents(conn *netfilter.Conn, chains []string) (parentRules, error) {
	out := parentRules{}
	for _, p := range parentsOf(chains) {
		rules, err := conn.Rules(t.nfproto(), "nat", p)
		if err != nil {
			return nil, err
		}
		out[p] = rules
	}
	return out, nil
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range sortedChains(m) {
		out = append(out, k)
	}
	return out
}

// removeNL adds to batch the deletion of the owner chains that exist in
// the family (every jump to them, by handle, then the chains). The jumps
// come from the owner's file of jumps when recorded is set and it tells
// the truth (jumps_linux.go), else from a dump of the built-in chains.
func (t ipt) removeNL(conn *netfilter.Conn, o fwtypes.Owner, batch *netfilter.Batch, recorded bool) error {
	present, err := t.existingNL(conn, iptOwnerChains(o))
	if err != nil || len(present) == 0 {
		return err
	}
	jumps, known := []jump(nil), false
	if recorded {
		if jumps, known, err = t.knownJumps(conn, o, present); err != nil {
			return err
		}
	}
	if !known {
		if jumps, err = t.dumpedJumps(conn, present); err != nil {
			return err
		}
	}
	for _, j := range jumps {
		batch.DelRule(t.natTable(), j.parent, j.handle)
	}
	for chain := range sortedChains(present) {
		batch.FlushChain(t.natTable(), chain)
	}
	for chain := range sortedChains(present) {
		batch.DelChain(t.natTable(), chain)
	}
	return nil
}

// dumpedJumps finds the jumps into the present chains in a dump of the
// built-in chains.
func (t ipt) dumpedJumps(conn *netfilter.Conn, present map[string][]string) ([]jump, error) {
	parents, err := t.parents(conn, keys(present))
	if err != nil {
		return nil, err
	}
	var out []jump
	for _, p := range iptParents {
		for _, r := range parents[p] {
			if _, ok := present[r.Jump]; ok {
				out = append(out, jump{parent: p, handle: r.Handle})
			}
		}
	}
	return out, nil
}

// familyNL is what Ensure read of a family over netlink: the owner
// chains present (with their rules' comments) and, when there are any, the
// built-in chains that may jump to them.
type familyNL struct {
	present map[string][]string
	parents parentRules
}

// inPlaceNL reports whether the family already holds exactly the desired
// owner chains (by their rules' digest comments) and their jumps, and no
// other owner chain: then Ensure has nothing to write. It returns what it
// read, for the write.
func (t ipt) inPlaceNL(conn *netfilter.Conn, o fwtypes.Owner, desired []iptUnit) (done bool, st familyNL, err error) {
	st.present, err = t.presentNL(conn, iptOwnerChains(o))
	if err != nil || len(st.present) == 0 {
		return err == nil && len(desired) == 0, st, err
	}
	if st.parents, err = t.parents(conn, keys(st.present)); err != nil {
		return false, st, err
	}
	return len(st.present) == len(desired) && unitsMatch(o, desired, st.present, st.parents), st, nil
}

// unitsMatch compares desired chains with the comments read back, and
// checks that each of their jumps is in its parent.
func unitsMatch(o fwtypes.Owner, desired []iptUnit, present map[string][]string, parents parentRules) bool {
	for _, u := range desired {
		got, ok := present[u.chain]
		if !ok || len(got) != len(u.rules) {
			return false
		}
		for i, r := range u.rules {
			if got[i] != iptRuleComment(r) {
				return false
			}
		}
		for _, e := range iptEntries(o, u.chain, u.rules) {
			if !hasEntry(parents[e.parent], e) {
				return false
			}
		}
	}
	return true
}

// hasEntry finds an entry by its comment and target, whatever its handle.
func hasEntry(rules []netfilter.Rule, e iptEntry) bool {
	tag := strings.SplitN(e.spec, `"`, 3)[1]
	target := e.spec[strings.LastIndex(e.spec, " ")+1:]
	for _, r := range rules {
		if r.Comment == tag && r.Jump == target {
			return true
		}
	}
	return false
}
