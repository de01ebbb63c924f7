package netfilter

import "cnisuite/pkg/sitter"

// Closing the netfilter socket of a transaction that deleted rules, chains
// or map elements waits in the kernel (nft_rcv_nl_event flushes the
// per-netns nf_tables destroy work, which sits in synchronize_rcu) for an
// RCU grace period: 5 to 20 ms on a loaded node. Process exit closes the
// socket the same way, so a plugin's DEL would return only after it. What
// is left at that point is freeing memory: the deletions were committed,
// and no packet sees the rules any more. So the socket goes to the node's
// sitter (pkg/sitter), which holds the last reference and sits out the
// wait; the caller closes its own copy at once and does not wait. When no
// sitter can take it, the socket is closed here, with the wait.
//
// Every binary that uses this package dispatches the sitter:
//
//	helper.Dispatch(helper.Set{sitter.HelperName: sitter.Serve})

// closeDetached closes fd without waiting for the kernel's deferred
// release, and reports whether it could; false leaves fd open.
func closeDetached(fd int) bool { return sitter.Hold(fd) }
