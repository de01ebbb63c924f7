// Package xtnft encodes iptables rules into nftables expressions exactly as
// iptables-nft 1.8.9 does, so that rules written over netlink read back in
// iptables-save, iptables -S and iptables -D as if iptables-restore had
// written them. It covers the rule shapes the iptables backend renders, not
// iptables: any other argument is ErrUnsupported, and the caller then
// writes with iptables-restore.
//
// What iptables-nft 1.8.9 writes (learnt by dumping what iptables-restore
// sends): "-p" is a native meta l4proto match; "-s"/"-d" load only the
// prefix's whole bytes and compare them, or load the whole address, mask it
// with bitwise and compare when the prefix ends inside a byte; "-m tcp" and
// "-m udp" with only --dport are a native transport-header comparison,
// "-m sctp" an xt match; "-m mark" is native (meta mark, bitwise, cmp);
// "-m comment" and "-m addrtype" are xt matches; a counter precedes the
// target; RETURN and jumps are native verdicts; MASQUERADE, MARK and DNAT
// are xt targets. Every rule carries the compat attribute with its "-p"
// protocol, and no user data.
package xtnft
