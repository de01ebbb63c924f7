package nftfake

import (
	"slices"

	"golang.org/x/sys/unix"
)

// The in-memory ruleset. Rules, elements and hooks never change once made
// (a transaction replaces or drops them), so a copy of the ruleset for a
// transaction copies tables, chains and sets, and shares those.

type table struct {
	family byte
	name   string
	hgen   uint64 // the last handle given to a chain, rule or set of the table
	chains []*chain
	sets   []*set
}

type hook struct {
	typ    string
	num    uint32
	prio   int32
	policy uint32
}

type chain struct {
	name   string
	handle uint64
	hook   *hook // nil for a regular chain
	rules  []*rule
}

type rule struct {
	handle   uint64
	exprs    []byte   // NFTA_RULE_EXPRESSIONS as sent
	userdata []byte   // NFTA_RULE_USERDATA as sent
	jumps    []string // the chains its immediates jump or go to
	sets     []string // the sets its lookups read
}

type set struct {
	name                string
	handle              uint64
	flags               uint32
	keyType, keyLen     uint32
	dataType, dataLen   uint32
	fieldLens           []uint32
	userdata            []byte
	elems               []elem
	anonymous, constant bool
}

type elem struct {
	key, end []byte // end: NFTA_SET_ELEM_KEY_END, nil without
	flags    uint32
	verdict  *verdict
	data     []byte
	userdata []byte
}

type verdict struct {
	code  int32
	chain string
}

func (s *set) isMap() bool      { return s.flags&mapFlag != 0 }
func (s *set) interval() bool   { return s.flags&intervalFlag != 0 }
func (s *set) concat() bool     { return s.flags&concatFlag != 0 }
func (s *set) verdictMap() bool { return s.isMap() && s.dataType == verdictType }

// ruleset is the fake's state: its tables in the order they were made.
type ruleset struct{ tables []*table }

func (rs *ruleset) clone() *ruleset {
	out := &ruleset{tables: make([]*table, len(rs.tables))}
	for i, t := range rs.tables {
		c := *t
		c.chains = make([]*chain, len(t.chains))
		for j, ch := range t.chains {
			cc := *ch
			cc.rules = slices.Clone(ch.rules)
			c.chains[j] = &cc
		}
		c.sets = make([]*set, len(t.sets))
		for j, s := range t.sets {
			sc := *s
			sc.elems = slices.Clone(s.elems)
			c.sets[j] = &sc
		}
		out.tables[i] = &c
	}
	return out
}

func (rs *ruleset) table(family byte, name string) *table {
	for _, t := range rs.tables {
		if t.family == family && t.name == name {
			return t
		}
	}
	return nil
}

// tableOf finds the table a message names in attribute attr: EINVAL or
// ERANGE for a name missing or too long, ENOENT for no such table.
func (rs *ruleset) tableOf(family byte, a attrs, attr uint16) (*table, error) {
	n, err := name(a, attr)
	if err != nil {
		return nil, err
	}
	t := rs.table(family, n)
	if t == nil {
		return nil, unix.ENOENT
	}
	return t, nil
}

// chainOf finds the table and the chain a message names.
func (rs *ruleset) chainOf(family byte, a attrs, tableAttr, chainAttr uint16) (*table, *chain, error) {
	t, err := rs.tableOf(family, a, tableAttr)
	if err != nil {
		return nil, nil, err
	}
	n, err := name(a, chainAttr)
	if err != nil {
		return nil, nil, err
	}
	c := t.chain(n)
	if c == nil {
		return nil, nil, unix.ENOENT
	}
	return t, c, nil
}

func (rs *ruleset) dropTable(t *table) {
	rs.tables = slices.DeleteFunc(rs.tables, func(x *table) bool { return x == t })
}

func (t *table) chain(name string) *chain {
	for _, c := range t.chains {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (t *table) set(name string) *set {
	for _, s := range t.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

// use is the chain's use count as the kernel keeps it: its rules, and
// the jumps and gotos to it of rules and verdict-map elements.
func (t *table) use(c *chain) uint32 {
	n := uint32(len(c.rules))
	for _, o := range t.chains {
		for _, r := range o.rules {
			for _, j := range r.jumps {
				if j == c.name {
					n++
				}
			}
		}
	}
	for _, s := range t.sets {
		for _, e := range s.elems {
			if e.verdict != nil && e.verdict.chain == c.name {
				n++
			}
		}
	}
	return n
}

// bound reports whether a rule of the table reads the set.
func (t *table) bound(name string) bool {
	for _, c := range t.chains {
		for _, r := range c.rules {
			if slices.Contains(r.sets, name) {
				return true
			}
		}
	}
	return false
}

// dropRule removes a rule of the chain, and the anonymous sets that only
// it read (the kernel destroys an anonymous set with its rule).
func (t *table) dropRule(c *chain, r *rule) {
	c.rules = slices.DeleteFunc(c.rules, func(x *rule) bool { return x == r })
	for _, name := range r.sets {
		if s := t.set(name); s != nil && s.anonymous && !t.bound(name) {
			t.sets = slices.DeleteFunc(t.sets, func(x *set) bool { return x == s })
		}
	}
}
