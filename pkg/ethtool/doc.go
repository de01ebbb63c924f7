// Package ethtool reads and changes a network interface's features (the
// offloads of `ethtool -k` / `ethtool -K`) and its channel counts (`ethtool
// -l` / `ethtool -L`) over the kernel's "ethtool" generic-netlink family,
// without the ethtool binary.
//
// A Client acts in the network namespace of the thread that dialed it, so
// a plugin dials inside ns.Do. Features are named by the kernel's strings
// (the ETH_SS_FEATURES string set: "tx-checksum-ip-generic", "rx-gro", …),
// never by ethtool's group names ("tx-checksumming"), which are a
// convenience of ethtool's command line that callers expand themselves.
//
// github.com/mdlayher/ethtool was considered: it has no features or
// channels requests, so this package speaks the family itself, with
// github.com/mdlayher/genetlink for the family lookup and message framing.
package ethtool
