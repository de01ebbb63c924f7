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
// kernel for an RCU grace period; Close hands such a socket to the node's
// sitter (pkg/sitter), which sits the wait out, so that a DEL answers when
// its deletions are committed.
//
// The socket, the batch and the rule decoding are written here rather than
// taken from github.com/google/nftables, whose expressions (package expr)
// and comment encoding (package userdata) they do use: the comments at Conn,
// Batch and Rule say why, piece by piece.
package netfilter
