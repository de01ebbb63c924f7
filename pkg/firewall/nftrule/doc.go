// Package nftrule is the vocabulary of our nftables rules and maps, each
// written once and rendered both as nft text (what golden files and
// `nft -f` take) and as kernel bytes (what a netlink batch carries).
//
// A rule is a list of typed parts (Addr, Prefix, Dport, IfName,
// EtherSaddr, NotIn an anonymous Set, …) ending in a verdict (Drop, Jump,
// Masquerade, DNATTo, VmapOf), from which Build derives its text and its
// kernel expressions, built the way nft 1.0 linearizes the text so that
// `nft list ruleset` prints them alike. Only free-form user conditions
// (Words) have no kernel form.
//
// The named sets and maps of our tables (Maps) and their elements (Elem)
// are written the same two ways: Map.Text and Map.Spec declare a map;
// ElemKeys and ElemData encode an element written as text ("10.0.0.2 .
// tcp . 80") into the bytes the kernel keeps.
//
// TestParts and TestElemKeys table-test both renderings without root; the
// nftables backend's TestNetlinkMatchesScript is the kernel's proof.
package nftrule
