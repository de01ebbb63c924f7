// Package nftables is the nftables backend: the masquerade chains of the
// bridge plugin (tables ip/ip6 cnisuite_masq) and the port-mapping chains
// of the portmap plugin (ip/ip6 cnisuite_portmap), with the spoof check and
// isolation of package bridgechains in the same transaction. Package nftmodel turns them
// into one netlink batch per call.
//
// Base chains dispatch through verdict maps keyed by what a packet carries
// (source address; destination address, protocol and port; input
// interface) to the owner chains (mq-, pm-, pmq-, sc- followed by 8 hex of
// the network hash and 16 of the owner hash). A key held by another owner
// (the same host port, source address or interface) makes Ensure fail with
// fwapi.ErrConflict.
//
// A port range is one element of an interval map (port_ranges,
// hostip_port_ranges, hairpin_ranges), beside the maps of single ports,
// whose flags cannot change while running pods' elements are in them; the
// range maps and their chains join a table's skeleton only for an owner
// with a range. An overlap the kernel does not refuse (a range against a
// single port, a range around another) is found by reading the maps
// before the transaction (nftmodel.CrossConflict), unless the context says
// the node's host port claims decided already (fwapi.PortsClaimed): the
// read grows with the pods, the claims do not.
//
// Only traffic addressed to the node reaches the port maps (prerouting and
// output jump to them behind "fib daddr type local"). Hairpin and localhost
// connections are masqueraded in postrouting: DNATed connections reach the
// owner's masquerade chain through a map keyed by container address,
// protocol and container port, and no packet mark is needed.
package nftables
