// Package trust holds the tests of what a plugin call may leave and lend
// (issue 41): after every verb of every plugin, and around cnisuite resync
// and watch, no process of ours is left and no socket of ours listens; a
// process running as uid 0 without CAP_NET_ADMIN in the same namespaces —
// a hostNetwork pod, a --network host container — cannot make anything of
// ours delete or change a link or a rule for it; and no binary of ours
// carries a set-user-ID bit or file capabilities.
//
// The tests run as root inside scripts/sandbox.sh (sandbox.Require). The
// unprivileged process is this test binary run again through setpriv with
// every capability dropped (deputyMain).
package trust
