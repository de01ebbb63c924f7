package iptables

import "cnisuite/pkg/netfilter"

// withWriter returns the backend of this node writing with w: tests
// construct the writer they mean (newLegacy("-legacy") for a legacy node,
// &nft{} for netlink without an iptables-restore to fall back on).
func withWriter(w writer) *Backend {
	b := New()
	b.writer() // the node's choice made, then replaced
	b.w = w
	return b
}

// listRules lists a chain's rules on a netfilter socket of its own.
func listRules(family byte, table, chain string) ([]netfilter.Rule, error) {
	conn, err := netfilter.Dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Rules(family, table, chain)
}
