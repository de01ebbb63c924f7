package rootless

import (
	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
)

// DeniedNetns reports, once opening a socket in a container's netns
// failed, whether that is because the plugin runs without the node's root
// (a rootless runtime: uid 0 of a user namespace) and the namespace
// belongs to another user namespace, which it may not enter.
func DeniedNetns(n *ns.NetNS) bool {
	if NodeRoot() {
		return false
	}
	foreign, err := n.ForeignOwner()
	return err == nil && foreign
}

// NetnsDenied is the error for a container netns (path) the plugin may not
// enter: code 4 saying why, instead of "operation not permitted" at the
// first netlink socket.
func NetnsDenied(path string, err error) error {
	return types.Errorf(types.ErrInvalidEnv, "CNI_NETNS %q: cannot enter it: the plugin runs without the node's root "+
		"(a rootless runtime: uid 0 of a user namespace) and the namespace belongs to another user namespace: %w", path, err)
}
