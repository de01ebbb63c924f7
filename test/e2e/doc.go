// Package e2e holds the end-to-end tests: real runtimes — podman with its
// CNI network backend, containerd's `ctr run --cni`, and containerd's CRI
// plugin driven over CRI gRPC as the kubelet drives it — and the runtime
// library (libcni) drive the built plugins exactly as a node does. The
// switch to and from the reference plugins (built from the module proxy)
// and the per-call log are tested here too. Each
// runtime test runs inside a private network and mount namespace of its own
// (a "node"), with tmpfs over every state directory and the plugin binaries
// bind-mounted on /opt/cni/bin; nothing touches the machine's own network.
//
// Run them with `make e2e` (as root); scripts/install-e2e-deps.sh installs
// the runtimes.
package e2e
