// Package firewall programs the packet-filter rules of attachments: the
// bridge plugin's masquerade and MAC/IP spoof check, and the portmap
// plugin's host-port DNAT with hairpin and localhost masquerade.
//
// One narrow interface, Backend (Ensure, Remove, Check, GC, Usable), has
// two implementations chosen once per call by New: nftables and iptables.
// Fake records state in memory for plugin tests and Dumps the text the real
// backend would write; Render gives that text for golden tests.
//
// # Ownership
//
// Every rule belongs to an Owner (plugin, network, container ID, interface
// name). Each owner has its own chains, named after a hash of the network
// and of the owner, so Remove, Check and GC need no listing of other
// owners' rules: their cost does not grow with the number of attachments.
//
// # nftables
//
// Tables ip/ip6 cnisuite_masq, ip/ip6 cnisuite_portmap and bridge
// cnisuite_spoofcheck. Base chains dispatch through verdict maps keyed by
// what a packet carries (source address; destination address, protocol
// and port; input interface) to the owner chains (mq-, pm-, pmq-, sc-
// followed by 8 hex of the network hash and 16 of the owner hash). Each
// owner rule's comment holds a digest of the rule and the map element it
// needs ("cnisuite <digest> <map>:<key>"): Remove reads the owner's chains
// over netlink, deletes those elements and the chains, in one `nft -f -`
// transaction. A key held by another owner (the same host port, source
// address or interface) makes Ensure fail with ErrConflict.
//
// Only traffic addressed to the node reaches the port maps (prerouting and
// output jump to them behind "fib daddr type local"). Hairpin and localhost
// connections are masqueraded in postrouting: DNATed connections reach the
// owner's masquerade chain through a map keyed by container address,
// protocol and container port, and no packet mark is needed.
//
// # iptables
//
// Table nat, chains CNIS-MQ- (from POSTROUTING, per container address),
// CNIS-DN- (from PREROUTING and OUTPUT behind "-m addrtype --dst-type
// LOCAL") and CNIS-HM- (appended to POSTROUTING; masquerades packets
// carrying the mark bit that CNIS-DN- sets, or nothing with an external
// mark chain). Every call applies one `iptables-restore --noflush --wait`
// payload per family; it reads only the owner's own chains
// (`iptables -t nat -S <chain>`), except GC which reads `iptables-save -t
// nat` once per family. Spoof checks are bridge-family rules and always go
// through nftables.
//
// # Rules of the reference plugins
//
// Remove also deletes what the reference plugins wrote for the same
// attachment (see removeReference): portmap's nftables rules in ip/ip6
// cni_hostport commented with the container ID and its iptables chain
// CNI-DN-<hash> with the jumps from CNI-HOSTPORT-DNAT; bridge's nftables
// masquerade rules in inet cni_plugins_masquerade, its spoof-check chains
// in bridge nat, and its iptables chain CNI-<hash> with the jumps from
// POSTROUTING. The reference iptables chains are found over netlink, so
// only iptables-nft state is seen; the reference's shared chains
// (CNI-HOSTPORT-*) and tables are left in place.
package firewall
