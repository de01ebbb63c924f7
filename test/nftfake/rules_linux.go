package nftfake

import (
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// add rule: appended (NLM_F_APPEND) or inserted first, its expressions
// and user data kept as sent. What the fake checks of its expressions is
// what they refer to: the chain of a jump or goto (ENOENT when missing,
// EOPNOTSUPP for a base chain) and the set of a lookup (ENOENT when
// missing, by name or by its ID in the transaction; EBUSY for an
// anonymous set another rule holds). The handle is taken before the
// expressions are checked, as the kernel takes it.
func (tx *txn) newRule(family byte, m netlink.Message, a attrs) error {
	t, c, err := tx.rs.chainOf(family, a, unix.NFTA_RULE_TABLE, unix.NFTA_RULE_CHAIN)
	if err != nil {
		return err
	}
	t.hgen++
	r := &rule{handle: t.hgen, exprs: a[unix.NFTA_RULE_EXPRESSIONS], userdata: a[unix.NFTA_RULE_USERDATA]}
	for _, e := range netfilter.RawExprs(r.exprs) {
		switch e.Name {
		case "immediate":
			err = tx.immediate(t, r, e.Data)
		case "lookup":
			err = tx.lookup(t, r, e.Data)
		}
		if err != nil {
			return err
		}
	}
	if m.Header.Flags&netlink.Append != 0 {
		c.rules = append(c.rules, r)
	} else {
		c.rules = append([]*rule{r}, c.rules...)
	}
	if m.Header.Flags&netlink.Echo != 0 {
		body := append(nfgen(family), ruleAttrs(t, c, r, nil)...)
		tx.echoes = append(tx.echoes, frame(msgType(unix.NFT_MSG_NEWRULE), m.Header.Flags&(netlink.Append|netlink.Replace), m.Header.Sequence, body))
	}
	return nil
}

// immediate records the chain an immediate's verdict jumps or goes to.
func (tx *txn) immediate(t *table, r *rule, data []byte) error {
	a, err := parseAttrs(data)
	if err != nil {
		return err
	}
	d, ok := a[unix.NFTA_IMMEDIATE_DATA]
	if !ok {
		return unix.EINVAL
	}
	v, err := parseVerdictData(t, d)
	if err != nil || v == nil || v.chain == "" {
		return err
	}
	r.jumps = append(r.jumps, v.chain)
	return nil
}

// parseVerdictData reads NFTA_DATA_VERDICT of nested data (nil for a
// value): a jump or goto must name a regular chain of the table.
func parseVerdictData(t *table, d []byte) (*verdict, error) {
	da, err := parseAttrs(d)
	if err != nil {
		return nil, err
	}
	raw, ok := da[unix.NFTA_DATA_VERDICT]
	if !ok {
		return nil, nil
	}
	va, err := parseAttrs(raw)
	if err != nil {
		return nil, err
	}
	code, ok := va.u32(unix.NFTA_VERDICT_CODE)
	if !ok {
		return nil, unix.EINVAL
	}
	v := &verdict{code: int32(code)}
	if v.code != unix.NFT_JUMP && v.code != unix.NFT_GOTO {
		return v, nil
	}
	n, err := name(va, unix.NFTA_VERDICT_CHAIN)
	if err != nil {
		return nil, err
	}
	c := t.chain(n)
	switch {
	case c == nil:
		return nil, unix.ENOENT
	case c.hook != nil:
		return nil, unix.EOPNOTSUPP
	}
	v.chain = n
	return v, nil
}

// lookup binds the set a lookup reads to the rule.
func (tx *txn) lookup(t *table, r *rule, data []byte) error {
	a, err := parseAttrs(data)
	if err != nil {
		return err
	}
	s, err := tx.setOf(t, a, unix.NFTA_LOOKUP_SET, unix.NFTA_LOOKUP_SET_ID)
	if err != nil {
		return err
	}
	if s.anonymous && t.bound(s.name) {
		return unix.EBUSY
	}
	r.sets = append(r.sets, s.name)
	return nil
}

// setOf finds a set by name, or by the ID it was given in this
// transaction.
func (tx *txn) setOf(t *table, a attrs, nameAttr, idAttr uint16) (*set, error) {
	if n, ok := a.str(nameAttr); ok {
		if s := t.set(n); s != nil {
			return s, nil
		}
	}
	if id, ok := a.u32(idAttr); ok {
		if s := tx.ids[id]; s != nil && t.set(s.name) == s {
			return s, nil
		}
	}
	return nil, unix.ENOENT
}
