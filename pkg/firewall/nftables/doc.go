// Package nftables is the nftables backend: the masquerade chains of the
// bridge plugin (tables ip/ip6 cnisuite_masq) and the port-mapping chains
// of the portmap plugin (ip/ip6 cnisuite_portmap), with the spoof check and
// the isolation of bridge networks in the same transaction. Package
// nftmodel turns them into one netlink batch per call.
//
// It also holds what the iptables backend writes or removes with nftables
// too: the bridge-family chains (BridgeChains), which iptables lacks, and
// the removal of the reference plugins' rules (DeleteReference).
//
// What an attachment adds is elements of data maps and sets the fixed
// rules of the skeleton act on: masq and snat_to in cnisuite_masq;
// port_dnat, hostip_dnat, range_dnat and hostip_range_dnat (host port to
// container address and port), hairpin and hairpin_all (container address,
// protocol and port) in cnisuite_portmap. Each element's comment names the
// owner's ledger chain (mq-, pm-, pmq- followed by 8 hex of the network
// hash and 16 of the owner hash), which nothing reaches: its "continue"
// rules record the elements, for Remove, Check and GC. So an ADD adds no
// rule that a packet reaches and no jump from one, and the kernel's
// validation of the table at each commit walks the fixed rules only,
// whatever the number of attachments. The prefixes that keep traffic
// within a subnet from masquerade (masq_nets, hairpin_nets) are one element
// per subnet, recorded by a subnet chain (ms-, ps-) that each owner in the
// subnet holds with a jump from its ledger; no interval set holds an
// element per pod (a pipapo set's removal costs in proportion to its
// elements), but hairpin_masq's for ranges of container ports.
//
// Port mappings with user conditions, spoof checks and isolation keep a
// chain of rules per owner, dispatched to by verdict maps keyed by what a
// packet carries (source address; destination address, protocol and
// port; interface) (legacy.go). A key held by another owner (the same
// host port, source address or interface) makes Ensure fail with
// fwapi.ErrConflict.
//
// A port range is one element of an interval map (range_dnat,
// hostip_range_dnat, hairpin_masq; port_ranges, hostip_port_ranges,
// hairpin_ranges for owners with conditions, whose maps and chains join a
// table's skeleton only for such an owner). An overlap the kernel does not refuse (a range against a
// single port, a range around another) is found by reading the maps
// before the transaction (nftmodel.CrossConflict), unless the context says
// the node's host port claims decided already (fwapi.PortsClaimed): the
// read grows with the pods, the claims do not.
//
// Only traffic addressed to the node reaches the port maps (prerouting and
// output jump to them behind "fib daddr type local"). Hairpin and localhost
// connections are masqueraded in postrouting: a DNATed connection whose
// container address, protocol, port and source are in hairpin_masq, and no
// packet mark is needed.
//
// # Spoof check
//
// Both backends write the bridge plugin's bridge-family chains, since
// iptables has no bridge family, in one netlink transaction with the
// rest (the iptables backend through BridgeChains); removal and GC are
// nftmodel's, with every other chain of the owner. The MAC/IP spoof check
// is a chain in table bridge cnisuite_spoofcheck, reached through the map
// ifaces keyed by the host end of the container's veth (spoofCheck,
// spoofSkeleton).
//
// # Isolation
//
// The bridge plugin's icc and isolate keys (isolation, isolationSkeletons),
// in two tables named cnisuite_isolate:
//
//   - bridge: frames between two ports of a bridge. With icc off, an
//     owner's port is a key of both maps icc_from and icc_to, so a frame
//     from one such port to another is dropped, with or without
//     br_netfilter.
//   - inet: forwarded packets (base chain forward). Replies and DNATed
//     (port-mapped) connections are accepted first. With icc off, packets
//     routed from the bridge back to an owner's address are dropped (map
//     icc_addrs4/6). With isolate, the network's chain (map iso_from,
//     keyed by its bridge) sends packets leaving the bridge for another
//     isolated bridge to that bridge's drop chain (map iso_to); "strict"
//     also drops what the bridge forwards to or receives from any interface
//     but itself and the node's uplinks (map iso_into).
//
// The per-bridge chains are network chains (nftmodel.NetChainName), shared
// by the network's owners; each owner holds them with jumps from its own
// chain ih-…, so that the kernel refuses to delete them until the
// network's last owner is gone (nftmodel.ReleaseShared).
//
// # The reference plugins' rules
//
// DeleteReference finds and removes what the reference CNI plugins wrote
// for one attachment, whichever of our backends runs the DEL, so that a
// node upgraded from them leaks nothing:
//
//   - portmap: rules commented with the container ID in the nftables
//     tables ip/ip6 cni_hostport; the iptables(-nft) chain CNI-DN-<hash>
//     and its jumps in CNI-HOSTPORT-DNAT.
//   - bridge: rules of inet cni_plugins_masquerade whose comment starts
//     with the attachment's hash; the spoof-check chains of table bridge
//     nat; the iptables(-nft) masquerade chain CNI-<hash> and its jumps in
//     POSTROUTING.
//
// Everything is found over netlink, so only iptables-nft state is seen; the
// reference's shared chains (CNI-HOSTPORT-*) and tables are left in place.
package nftables
