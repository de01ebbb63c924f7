package link

import (
	"errors"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/rootless"
	"cnisuite/pkg/types"
)

// OpenContainer opens the container's network namespace at path and a
// route socket in it (the only kind a plugin needs there: each socket in
// the container costs two namespace switches). Its errors carry their CNI
// code: a path that is no namespace is a bad environment (4), as is one a
// rootless runtime's plugin may not enter (rootless.NetnsDenied).
//
// With tolerant (DEL), a namespace that is gone is no error, nor one that
// is no namespace or may not be entered, which ADD refused: both results
// are nil, and warn is told of the last two.
func OpenContainer(path string, tolerant bool, warn func(error)) (*ns.NetNS, *netlink.Handle, error) {
	n, err := ns.Open(path)
	if err != nil {
		if tolerant && errors.Is(err, ns.ErrNotExist) {
			return nil, nil, nil
		}
		err = types.Errorf(types.ErrInvalidEnv, "CNI_NETNS %q: %w", path, err)
		if tolerant && errors.Is(err, ns.ErrNotNetNS) {
			warn(err)
			return nil, nil, nil
		}
		return nil, nil, err
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
	if err == nil {
		return n, h, nil
	}
	foreign := rootless.DeniedNetns(n)
	_ = n.Close() // read-only handle: nothing to flush
	switch {
	case foreign && tolerant:
		// An ADD with the same privileges could put nothing there.
		warn(rootless.NetnsDenied(path, err))
		return nil, nil, nil
	case foreign:
		return nil, nil, rootless.NetnsDenied(path, err)
	}
	return nil, nil, types.Errorf(types.ErrIO, "opening a netlink socket in %q: %w", path, err)
}
