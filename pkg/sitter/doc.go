// Package sitter runs the one process of a node that sits out the kernel's
// waits after a DEL's work is done, for every plugin call that needs one.
//
// Two kernel waits follow work that is already done. Deleting a veth pair
// returns only after rcu_barrier() (10-25 ms here), though both ends were
// unlisted and announced gone under the RTNL lock long before. Closing a
// netfilter socket whose transaction deleted rules waits for the nf_tables
// destroy work, which sits in synchronize_rcu(), though the deletions were
// committed. A plugin hands such work to a process that outlives it and
// answers at once (test/bench/RESULTS.md, round 1: bridge DEL 37 → 12-13
// ms, a deleting netfilter call 5-20 ms less).
//
// Until round 14 every DEL started helpers of its own for this: bridge one,
// portmap another, each a start of the Go runtime (about 2 ms of CPU) —
// two processes per pod the do-nothing plugins do not have, which a burst
// of DELs on a two-core node pays in full (round 13). The sitter is
// instead one process per network namespace of the callers, found by an
// abstract Unix socket name (SOCK_SEQPACKET): the first call that needs it
// starts it (the plugin's own binary, as helper HelperName through
// pkg/helper), the calls after it connect, and it exits once nothing came
// for its idle time. Over the connection a caller
//
//   - hands it a descriptor to close (SCM_RIGHTS): the message in flight,
//     then the sitter, holds a reference, so the caller's own close is not
//     the last one and does not wait; and
//   - asks it to delete the link with an index in a network namespace
//     (the namespace's descriptor comes with the request), and gets "ok" or
//     the error once the deletion returned, barrier included; bridge's DEL
//     returns as soon as the kernel announced both ends gone.
//
// Trust: the name can be bound by any process of the namespace. The caller
// uses a sitter only when the socket's peer runs as its own user (root on a
// node), and the sitter serves only callers of its own user; anything else
// is as if no sitter ran, and the caller does the work and the wait
// itself, as it does when the sitter cannot start or a request fails. The
// name carries the protocol's version: binaries that speak another version
// never meet.
package sitter
