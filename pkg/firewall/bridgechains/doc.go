// Package bridgechains describes the bridge plugin's nftables chains that
// either backend writes, since iptables has no bridge family: the MAC/IP
// spoof check and the isolation of bridge networks (icc, isolate). Both
// backends write them in one netlink transaction; removal and GC are
// nftmodel's, with every other chain of the owner.
//
// # Spoof check
//
// An nftables chain in table bridge cnisuite_spoofcheck, reached through
// the map ifaces keyed by the host end of the container's veth
// (SpoofCheck, SpoofSkeleton).
//
// # Isolation
//
// The bridge plugin's icc and isolate keys (Isolation, IsolationSkeletons),
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
package bridgechains
