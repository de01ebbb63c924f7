// Package iptables is the iptables backend. Table nat, chains CNIS-MQ-
// (from POSTROUTING, per container address), CNIS-DN- (from PREROUTING and
// OUTPUT behind "-m addrtype --dst-type LOCAL") and CNIS-HM- (appended to
// POSTROUTING; masquerades packets carrying the mark bit that CNIS-DN- sets,
// or nothing with an external mark chain). Package natchain describes them:
// names, rules as argument tokens, jumps, iptables-restore payloads, and
// the same rules encoded as iptables-nft encodes them.
//
// The backend picks one writer for the node, once, at its first use
// (Backend.writer):
//   - legacy (legacy_linux.go), for iptables-legacy: one
//     `iptables-restore --noflush --wait` payload per family that has
//     something to write; reads with `iptables -t nat -S <chain>` of the
//     owner's chains, checks jumps with `iptables -C`.
//   - nft (nft_linux.go, nftremove_linux.go), for iptables-nft (the binary
//     resolves to xtables-nft-multi): reads and writes over netlink, one
//     transaction per family, the rules encoded from their tokens exactly
//     as iptables-nft 1.8.9 encodes them (natchain.Encode), so iptables-save,
//     iptables -D and iptables-restore see what iptables-restore would have
//     written. It falls back to iptables-restore for user conditions, when
//     table nat or a built-in chain is missing (iptables-restore creates
//     them), and once after a failed transaction. An ADD finding its chains
//     and jumps in place writes nothing; DEL deletes the jumps by rule
//     handle (recorded at ADD, jumps_linux.go) and the chains in one netlink
//     transaction, together with the owner's nftables chains (package
//     nftmodel: the spoof check, the isolation) and the reference plugins'
//     rules (nftables.DeleteReference).
//
// Both writers GC with `iptables-save -t nat` once per family.
//
// Spoof checks and the isolation of bridge networks are bridge-family (and
// inet) rules, which iptables lacks: nftables.BridgeChains describes them
// and Ensure writes them with nftables; the localnet guard is nftmodel's.
// A call shares one netfilter socket among all of these (call,
// family_linux.go), dialled only when one is needed.
package iptables
