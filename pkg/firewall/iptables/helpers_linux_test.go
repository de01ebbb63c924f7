package iptables

// withWriter returns the backend of this node writing with w: tests
// construct the writer they mean (newLegacy("-legacy") for a legacy node,
// &nft{} for netlink without an iptables-restore to fall back on).
func withWriter(w writer) *Backend {
	b := New()
	b.writer() // the node's choice made, then replaced
	b.w = w
	return b
}
