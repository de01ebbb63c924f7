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
// over netlink and deletes those elements and the chains. A key held by
// another owner (the same host port, source address or interface) makes
// Ensure fail with ErrConflict.
//
// Every call reads and writes over one netfilter netlink socket, and each
// transaction is one netlink batch (nlbatch_linux.go builds the same
// messages nft would, nft_exprs.go the same expressions; a test proves both
// list identically). Only rules nft alone can build (user conditions, spoof
// checks) still go through `nft -f -`. The fixed part of a table (maps,
// base chains and their rules) is written only when a read shows it is not
// intact, and an owner chain already holding its rules is left alone, so
// an ADD, fresh or repeated, deletes nothing. That matters: a transaction
// that deletes makes the next close of a netfilter socket wait for an RCU
// grace period (the kernel frees deleted objects after it). DEL cannot
// avoid deleting, so its socket is handed to a short-lived helper process
// that sits out the wait (linger_linux.go): the deletions are committed
// when Remove returns.
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
// mark chain). Writing is one `iptables-restore --noflush --wait` payload
// per family that has something to write. With iptables-nft (the binary
// resolves to xtables-nft-multi), reads go over netlink: the owner's own
// chains, whose use counts tell CHECK their jumps are there; DEL (and an
// ADD over existing chains) dumps the built-in chains holding the jumps,
// the one read that grows with the number of attachments. An ADD finding
// its chains and jumps in place writes nothing; DEL deletes the jumps by
// rule handle and the chains in one netlink transaction, with the spoof
// check and the reference plugins' rules. With iptables-legacy every read is an
// `iptables -t nat -S <chain>`. GC reads `iptables-save -t nat` once per
// family. Spoof checks are bridge-family rules and always go through
// nftables.
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
