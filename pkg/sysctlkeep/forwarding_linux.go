package sysctlkeep

import "cnisuite/pkg/undo"

// HoldForwarding records that holder needs IP forwarding on, for the
// families asked for, so that `sysctl --system` keeps it on. Before each
// hold is taken, its release is pushed on u, so that a failed ADD lets go
// of what it held.
func (k Keeper) HoldForwarding(v4, v6 bool, holder string, u *undo.Stack) error {
	for _, key := range []struct {
		on   bool
		path string
	}{{v4, "net/ipv4/ip_forward"}, {v6, "net/ipv6/conf/all/forwarding"}} {
		if !key.on {
			continue
		}
		u.Push("sysctl hold "+key.path, func() error { return k.Release(holder) })
		if err := k.Hold(key.path, "1", holder); err != nil {
			return err
		}
	}
	return nil
}
