// Package firewall programs the packet-filter rules of attachments: the
// bridge plugin's masquerade, MAC/IP spoof check and isolation (icc,
// isolate), and the portmap plugin's host-port DNAT with hairpin and
// localhost masquerade.
//
// One narrow interface, Backend (Ensure, Remove, Check, GC, Usable), has
// two implementations: nftables and iptables. New returns the one a
// configuration names; without a name, an automatic choice (auto_linux.go)
// that picks a backend per network from what the node already uses
// (detect_linux.go), records it under /run until the network's last
// attachment goes (record_linux.go), removes from both backends what
// predates the record, and keeps a host port single-owner across the two
// backends (claims_linux.go). Fake is an in-memory Backend for the
// plugins' tests, whose text (what each backend would write) the golden
// files under testdata hold.
//
// # Packages
//
// Imports point only down this list. New constructs the backends, so they
// cannot import this package: the vocabulary they share lives in fwapi,
// and this package re-exports it under its own names (type aliases), so
// the plugins import only firewall.
//
//	firewall           New (backend selection, the per-network record, host
//	                   port claims), Fake; fwapi's names
//	firewall/iptables  the iptables backend: one writer per node kind, legacy
//	                   (iptables-restore) or iptables-nft (netlink)
//	iptables/natchain  its owner chains of table nat: rules as tokens, as
//	                   iptables-restore payloads, as iptables-nft encodes them
//	firewall/nftables  the nftables backend; also the bridge-family spoof
//	                   check and isolation, and the removal of the reference
//	                   plugins' rules, which the iptables backend uses too
//	firewall/nftmodel  our nftables tables, maps and owner chains, rendered
//	                   as an nft script or one netlink batch; Remove, Check
//	                   and GC of every owner chain, whichever backend wrote it
//	firewall/nftrule   one nftables rule as typed parts, and the elements of
//	                   our maps: their nft text and kernel bytes
//	firewall/fwapi     Owner, Rules, Backend, ErrMissing, ErrConflict
//	netfilter          the nfnetlink socket, batches, rule decoding
//
// # Ownership
//
// Every rule belongs to an Owner (plugin, network, container ID, interface
// name). Each owner has its own chains, named after a hash of the network
// and of the owner, so Remove, Check and GC need no listing of other
// owners' rules: their cost does not grow with the number of attachments.
//
// # Host ports
//
// Whatever the backend, New puts the node's host port claims in front of
// it (claims_linux.go): a portmap owner's ports and ranges are claimed in
// files under RecordRoot, bucketed by port, before its rules are written,
// and one overlapping another owner's makes Ensure fail with ErrConflict
// naming the holder. Remove and GC let go of them. Rootless, there are no
// claims.
//
// # nftables
//
// Tables ip/ip6 cnisuite_masq, ip/ip6 cnisuite_portmap, bridge
// cnisuite_spoofcheck, bridge/inet cnisuite_isolate and the node's
// localnet guard, ip cnisuite_localnet. An attachment adds elements of
// maps that fixed rules act on, or owner chains that verdict maps keyed by
// what a packet carries dispatch to. Each owner rule's comment
// holds a digest of the rule and the map element it needs: Remove reads the
// owner's chains over netlink and deletes those elements and the chains. A
// key held by another owner makes Ensure fail with ErrConflict. Every call
// reads and writes over one netfilter netlink socket, and each transaction
// is one netlink batch (anonymous sets included, as in the spoof check);
// only rules with user conditions go through `nft -f -`. An ADD, fresh or repeated, deletes
// nothing, so its socket closes without the kernel's post-delete wait; DEL
// cannot avoid deleting, and pays that wait when it closes its socket.
// See packages nftables and nftmodel.
//
// # iptables
//
// Table nat, chains CNIS-MQ-, CNIS-DN- and CNIS-HM-, each rule built once as
// argument tokens. On an iptables-legacy node, one `iptables-restore
// --noflush --wait` payload per family; on an iptables-nft node, reads and
// writes go over netlink, and DEL is one transaction with the owner's
// spoof check and the reference plugins' rules. Spoof checks and isolation
// (icc, isolate) need the bridge family and always go through nftables.
// See package iptables.
//
// # Network chains
//
// Isolation has chains shared by every owner of a network; each owner
// holds them with jumps from a chain of its own, and Remove and GC delete
// them only once the kernel's use count shows no owner holds them
// (nftables.BridgeChains, nftmodel.ReleaseShared).
//
// # Rules of the reference plugins
//
// Remove also deletes what the reference plugins wrote for the same
// attachment (nftables.DeleteReference): portmap's nftables rules and iptables
// DNAT chain, bridge's nftables masquerade rules, spoof-check chains and
// iptables masquerade chain. They are found over netlink, so only
// iptables-nft state is seen; the reference's shared chains and tables are
// left in place.
package firewall
