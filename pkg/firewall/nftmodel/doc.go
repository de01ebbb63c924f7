// Package nftmodel holds our nftables objects and turns them into one
// transaction per call. Every table of ours and every owner chain's name is
// defined here, whichever layer fills them: the nftables backend writes the
// masquerade and port-mapping chains, and the spoof-check and isolation
// chains that the iptables backend writes too; the iptables backend removes an owner's chains here
// too, so nothing of an attachment is left when the backend changed between
// ADD and DEL.
//
// A rule is described once, as parts (package nftrule), which give its nft
// text and, where we can build it, its kernel form; a chain is rendered
// either as an `nft -f` script (Script, also the text golden files hold)
// or as a netfilter.Batch (ensureBatch, anonymous sets included); a test
// of the nftables backend proves both list identically.
//
// Each owner rule's comment holds a digest of the rule and the map element
// it needs ("cnisuite <digest> <map>:<key>", with " : <value>" for a data
// map's): Remove reads the owner's chains over netlink and deletes those
// elements and the chains. A ledger chain (Ledger) holds only such
// comments, for elements of data maps and sets that fixed rules act on;
// Check also reads each of those elements. The fixed
// part of a table (Skeleton: maps, base chains and their rules) is written
// only when a read shows it is not intact, and an owner chain already
// holding its rules is left alone, so that an ADD, fresh or repeated,
// deletes nothing (a deleting transaction makes the next close of a
// netfilter socket wait; see pkg/netfilter).
package nftmodel
