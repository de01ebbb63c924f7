// Package natchain describes the owner chains the iptables backend keeps
// in table nat: their names, their rules as argument tokens, the jumps
// that lead into them, the iptables-restore payloads that write and delete
// them, and the same rules encoded as iptables-nft encodes them. A rule is
// built once, as tokens (kube-proxy's line buffer is the model): String
// quotes and joins them for iptables-restore, and Encode turns the same
// tokens into nftables expressions for netlink, so no rule is ever
// rendered to text and parsed back.
//
// # Encoding as iptables-nft 1.8.9
//
// Encode writes exactly what iptables-nft 1.8.9 writes, so that rules
// written over netlink read back in iptables-save, iptables -S and
// iptables -D as if iptables-restore had written them; DumpedSource and
// DumpedDNAT read back what it wrote. It covers the rule shapes of this
// package's chains, not iptables: any other argument is ErrUnsupported,
// and the caller then writes with iptables-restore.
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
package natchain
