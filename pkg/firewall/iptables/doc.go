// Package iptables is the iptables backend. Table nat, chains CNIS-MQ-
// (from POSTROUTING, per container address), CNIS-DN- (from PREROUTING and
// OUTPUT behind "-m addrtype --dst-type LOCAL") and CNIS-HM- (appended to
// POSTROUTING; masquerades packets carrying the mark bit that CNIS-DN- sets,
// or nothing with an external mark chain).
//
// With iptables-legacy, writing is one `iptables-restore --noflush --wait`
// payload per family that has something to write. With iptables-nft (the
// binary resolves to xtables-nft-multi), Ensure writes the same rules over
// netlink, one transaction per family, encoded exactly as iptables-nft
// 1.8.9 encodes them (package xtnft), so iptables-save, iptables -D and
// iptables-restore see what iptables-restore would have written; it falls
// back to iptables-restore for user conditions, when table nat or a
// built-in chain is missing (iptables-restore creates them), and once
// after a failed transaction (see write_linux.go). Reads go over netlink
// (pkg/netfilter): the owner's
// own chains, whose use counts tell CHECK their jumps are there; DEL (and
// an ADD over existing chains) dumps the built-in chains holding the jumps,
// the one read that grows with the number of attachments. An ADD finding
// its chains and jumps in place writes nothing; DEL deletes the jumps by
// rule handle and the chains in one netlink transaction, together with the
// owner's nftables chains (package nftchain: the spoof check) and the
// reference plugins' rules (package reference). With iptables-legacy every
// read is an `iptables -t nat -S <chain>`. GC reads `iptables-save -t nat`
// once per family.
//
// Spoof checks and the isolation of bridge networks are bridge-family (and
// inet) rules, which iptables lacks: packages spoofcheck and isolation
// describe them and NFTChains writes them with nftables, in one
// transaction; the localnet guard is nftchain's.
package iptables
