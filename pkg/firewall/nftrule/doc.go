// Package nftrule describes one nftables rule once: a list of typed parts
// (Addr, Prefix, Dport, IfName, EtherSaddr, NotIn an anonymous Set, …)
// ending in a verdict (Drop, Jump, Masquerade, DNATTo, VmapOf), from which
// Build derives both the nft text (what golden files and `nft -f` take)
// and the kernel expressions (what a netlink batch carries), built the way
// nft 1.0 linearizes the text so that `nft list ruleset` prints them alike.
// Only free-form user conditions (Words) have no kernel form.
//
// TestParts table-tests both renderings of each part without root; the
// nftables backend's TestNetlinkMatchesScript is the kernel's proof.
package nftrule
