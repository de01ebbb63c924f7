// Package netfilter talks nftables over one netfilter netlink socket per
// call: it reads chains and rules, and sends a Batch of messages as one
// transaction. It knows no table, chain or rule of ours; packages above it
// name them and build the expressions.
//
// What it decodes of a listed rule is only what our callers compare: the
// handle, the comment (an nft comment, or the text of an iptables-nft
// "-m comment" match), the chain it jumps to, and the raw expressions, which
// ParseExprs turns back into google/nftables expressions for the kinds our
// fixed rules use.
//
// Closing a socket after a transaction that deleted anything waits in the
// kernel for an RCU grace period; the call that deleted pays it, in its own
// process (nothing of ours outlives a call).
//
// Tests without root run a Conn over package nftfake's in-memory ruleset
// instead of the kernel's socket (DialPeer): the same encoders, decoders
// and waits for answers.
//
// The socket, the batch and the rule decoding are written here rather than
// taken from github.com/google/nftables, whose expressions (package expr)
// and comment encoding (package userdata) they do use: the comments at Conn,
// Batch and Rule say why, piece by piece.
package netfilter
