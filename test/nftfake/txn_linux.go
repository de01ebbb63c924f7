package nftfake

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Set flags and the verdict data type (linux/netfilter/nf_tables.h).
const (
	anonymousFlag = unix.NFT_SET_ANONYMOUS
	constantFlag  = unix.NFT_SET_CONSTANT
	intervalFlag  = unix.NFT_SET_INTERVAL
	mapFlag       = unix.NFT_SET_MAP
	concatFlag    = 0x80 // NFT_SET_CONCAT
	verdictType   = unix.NFT_DATA_VERDICT
	maxName       = 255 // NFT_NAME_MAXLEN less its NUL
	maxData       = 64  // NFT_DATA_VALUE_MAXLEN
)

// txn is one transaction being prepared on a copy of the ruleset.
type txn struct {
	rs     *ruleset
	ids    map[uint32]*set // sets made in this transaction, by NFTA_SET_ID
	echoes [][]byte
}

// apply prepares one message of the transaction; its error is the errno
// the kernel answers the message with.
func (tx *txn) apply(m netlink.Message) error {
	if m.Header.Type>>8 != unix.NFNL_SUBSYS_NFTABLES || len(m.Data) < 4 {
		return unix.EINVAL
	}
	family := m.Data[0]
	a, err := parseAttrs(m.Data[4:])
	if err != nil {
		return err
	}
	switch int(m.Header.Type & 0xff) {
	case unix.NFT_MSG_NEWTABLE:
		return tx.newTable(family, m.Header.Flags, a)
	case unix.NFT_MSG_DELTABLE:
		t, err := tx.rs.tableOf(family, a, unix.NFTA_TABLE_NAME)
		if err == nil {
			tx.rs.dropTable(t)
		}
		return err
	case unix.NFT_MSG_NEWCHAIN:
		return tx.newChain(family, m.Header.Flags, a)
	case unix.NFT_MSG_DELCHAIN:
		return tx.delChain(family, a)
	case unix.NFT_MSG_NEWRULE:
		return tx.newRule(family, m, a)
	case unix.NFT_MSG_DELRULE:
		return tx.delRule(family, a)
	case unix.NFT_MSG_NEWSET:
		return tx.newSet(family, m.Header.Flags, a)
	case unix.NFT_MSG_NEWSETELEM:
		return tx.setElems(family, m.Header.Flags, a, true)
	case unix.NFT_MSG_DELSETELEM:
		return tx.setElems(family, m.Header.Flags, a, false)
	}
	return unix.EOPNOTSUPP
}

// name reads a name attribute: missing is EINVAL, longer than the kernel
// keeps is ERANGE (the attribute policy's answer).
func name(a attrs, t uint16) (string, error) {
	s, ok := a.str(t)
	switch {
	case !ok:
		return "", unix.EINVAL
	case len(s) > maxName:
		return "", unix.ERANGE
	}
	return s, nil
}

// add table: an existing one is kept unless NLM_F_EXCL asks to fail.
func (tx *txn) newTable(family byte, flags netlink.HeaderFlags, a attrs) error {
	n, err := name(a, unix.NFTA_TABLE_NAME)
	if err != nil {
		return err
	}
	if familyName(family) == "" {
		return unix.EAFNOSUPPORT
	}
	if tx.rs.table(family, n) != nil {
		if flags&netlink.Excl != 0 {
			return unix.EEXIST
		}
		return nil
	}
	tx.rs.tables = append(tx.rs.tables, &table{family: family, name: n})
	return nil
}

// add chain: an existing one is kept (NLM_F_EXCL: EEXIST), unless the
// hook asked differs from its own, or it has none (EOPNOTSUPP: the kernel
// would have to update it).
func (tx *txn) newChain(family byte, flags netlink.HeaderFlags, a attrs) error {
	t, err := tx.rs.tableOf(family, a, unix.NFTA_CHAIN_TABLE)
	if err != nil {
		return err
	}
	n, err := name(a, unix.NFTA_CHAIN_NAME)
	if err != nil {
		return err
	}
	h, err := parseHook(a)
	if err != nil {
		return err
	}
	if c := t.chain(n); c != nil {
		switch {
		case flags&netlink.Excl != 0:
			return unix.EEXIST
		case h == nil:
			return nil
		case c.hook == nil || c.hook.typ != h.typ || c.hook.num != h.num || c.hook.prio != h.prio:
			return unix.EOPNOTSUPP
		}
		c.hook = h // a new hook: the ruleset before the transaction shares the old
		return nil
	}
	t.hgen++
	t.chains = append(t.chains, &chain{name: n, handle: t.hgen, hook: h})
	return nil
}

// parseHook reads a base chain's hook, type and policy; nil for a regular
// chain, which may not carry a policy.
func parseHook(a attrs) (*hook, error) {
	raw, ok := a[unix.NFTA_CHAIN_HOOK]
	if !ok {
		if _, ok := a[unix.NFTA_CHAIN_POLICY]; ok {
			return nil, unix.EOPNOTSUPP
		}
		return nil, nil
	}
	ha, err := parseAttrs(raw)
	if err != nil {
		return nil, err
	}
	num, ok1 := ha.u32(unix.NFTA_HOOK_HOOKNUM)
	prio, ok2 := ha.u32(unix.NFTA_HOOK_PRIORITY)
	if !ok1 || !ok2 {
		return nil, unix.EINVAL
	}
	h := &hook{typ: "filter", num: num, prio: int32(prio), policy: 1}
	if typ, ok := a.str(unix.NFTA_CHAIN_TYPE); ok {
		h.typ = typ
	}
	if p, ok := a.u32(unix.NFTA_CHAIN_POLICY); ok {
		if p > 1 { // NF_DROP or NF_ACCEPT only
			return nil, unix.EINVAL
		}
		h.policy = p
	}
	return h, nil
}

// delete chain: its own rules go with it; a chain that jumps, gotos or
// map elements still lead to is busy.
func (tx *txn) delChain(family byte, a attrs) error {
	t, c, err := tx.rs.chainOf(family, a, unix.NFTA_CHAIN_TABLE, unix.NFTA_CHAIN_NAME)
	if err != nil {
		return err
	}
	for _, r := range slices.Clone(c.rules) {
		t.dropRule(c, r)
	}
	if t.use(c) > 0 {
		return unix.EBUSY
	}
	t.chains = slices.DeleteFunc(t.chains, func(x *chain) bool { return x == c })
	return nil
}

// delete rule by handle, or flush a chain (no handle) or a table (no
// chain either).
func (tx *txn) delRule(family byte, a attrs) error {
	t, err := tx.rs.tableOf(family, a, unix.NFTA_RULE_TABLE)
	if err != nil {
		return err
	}
	chains := t.chains
	if _, ok := a[unix.NFTA_RULE_CHAIN]; ok {
		n, err := name(a, unix.NFTA_RULE_CHAIN)
		if err != nil {
			return err
		}
		c := t.chain(n)
		if c == nil {
			return unix.ENOENT
		}
		if h, ok := a.u64(unix.NFTA_RULE_HANDLE); ok {
			i := slices.IndexFunc(c.rules, func(r *rule) bool { return r.handle == h })
			if i < 0 {
				return unix.ENOENT
			}
			t.dropRule(c, c.rules[i])
			return nil
		}
		chains = []*chain{c}
	}
	for _, c := range chains {
		for _, r := range slices.Clone(c.rules) {
			t.dropRule(c, r)
		}
	}
	return nil
}

// familyName is the nft name of an NFPROTO_* number; "" for none.
func familyName(f byte) string {
	switch f {
	case unix.NFPROTO_IPV4:
		return "ip"
	case unix.NFPROTO_IPV6:
		return "ip6"
	case unix.NFPROTO_INET:
		return "inet"
	case unix.NFPROTO_BRIDGE:
		return "bridge"
	case unix.NFPROTO_ARP:
		return "arp"
	case unix.NFPROTO_NETDEV:
		return "netdev"
	}
	return ""
}

// setName gives an anonymous set ("__set%d") the lowest free number, as
// the kernel does.
func setName(t *table, n string) string {
	if !strings.Contains(n, "%d") {
		return n
	}
	for i := 0; ; i++ {
		if c := fmt.Sprintf(n, i); t.set(c) == nil {
			return c
		}
	}
}
