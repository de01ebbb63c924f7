// Package firewall programs the packet-filter rules of attachments: the
// bridge plugin's masquerade, MAC/IP spoof check and isolation (icc,
// isolate), and the portmap
// plugin's host-port DNAT with hairpin and localhost masquerade.
//
// One narrow interface, Backend (Ensure, Remove, Check, GC, Usable), has
// two implementations: nftables and iptables. New returns the one a
// configuration names; without a name, an automatic choice (auto_linux.go)
// that picks a backend per network from what the node already uses
// (detect_linux.go), records it under /run until the network's last
// attachment goes (record_linux.go), removes from both backends what
// predates the record, and keeps a host port single-owner across the two
// backends (claims_linux.go). The in-memory backend for plugin tests, and
// the text golden files hold, are package fwfake's.
//
// # Layers
//
// Imports point only down this list; the two backends never import each
// other.
//
//	firewall               New (backend selection, the per-network record, host
//	                       port claims); the names below
//	firewall/fwfake        an in-memory backend for tests; Render, the text a
//	                       backend writes, for golden files
//	firewall/nftables      the nftables backend: masquerade and port-mapping chains
//	firewall/iptables      the iptables backend: one writer per node kind, legacy
//	                       (iptables-restore) or iptables-nft (netlink)
//	iptables/natchain      its owner chains of table nat: rules as tokens,
//	                       iptables-restore payloads
//	iptables/xtnft         the same tokens encoded as iptables-nft does
//	firewall/bridgechains  the bridge-family spoof check and the bridge's icc
//	                       and isolate, whatever the backend
//	firewall/reference     the reference plugins' rules, removed by both backends
//	firewall/nftmodel      our nftables tables, maps and owner chains, rendered
//	                       as an nft script or one netlink batch
//	firewall/nftrule       one nftables rule as typed parts: its nft text and
//	                       its kernel expressions derive from them
//	firewall/fwapi         Owner, Rules, Backend, ErrMissing, ErrConflict
//	netfilter              the nfnetlink socket, batches, rule decoding
//
// New constructs the backends, so they cannot import this package: the
// vocabulary they share lives in fwapi, and this package re-exports it
// under its own names (type aliases), so plugins import only firewall.
// nftmodel sits below bridgechains and both backends because all three write
// or remove chains of our nftables tables; reference is a sibling of it,
// joined to a removal by the backend that runs it.
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
// cnisuite_spoofcheck and bridge/inet cnisuite_isolate. Base chains dispatch through verdict maps keyed by
// what a packet carries to the owner chains. Each owner rule's comment
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
// them only once the kernel's use count shows no owner holds them (package
// isolation, nftmodel.ReleaseShared).
//
// # Rules of the reference plugins
//
// Remove also deletes what the reference plugins wrote for the same
// attachment (package reference): portmap's nftables rules and iptables
// DNAT chain, bridge's nftables masquerade rules, spoof-check chains and
// iptables masquerade chain. They are found over netlink, so only
// iptables-nft state is seen; the reference's shared chains and tables are
// left in place.
package firewall
