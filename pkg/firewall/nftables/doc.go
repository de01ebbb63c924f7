// Package nftables is the nftables backend: the masquerade chains of the
// bridge plugin (tables ip/ip6 cnisuite_masq) and the port-mapping chains
// of the portmap plugin (ip/ip6 cnisuite_portmap), with the spoof check and
// isolation of package bridgechains in the same transaction. Package nftmodel turns them
// into one netlink batch per call.
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
package nftables
