package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cnisuite/pkg/link"
	"cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// Removing the bridge with its last port (removeEmptyBridge).
//
// The reference plugin never removes its bridge: an ADD that found the
// bridge and was about to add its port would lose it to a DEL that saw
// no ports. Here both hold the bridge's lock (a flock on a file under
// lockDir): ADD, shared, from before it looks the bridge up until its port
// is in; DEL, exclusive, while it counts the ports and removes an empty
// bridge. ADDs do not wait for each other (without removeEmptyBridge they
// take no lock at all: making the bridge and adding ports is safe at
// once), so a burst of pods is not serialised behind one lock; an ADD
// that waits behind a removal then makes the bridge anew.

// lockDir holds one lock file per bridge; it vanishes with a reboot, as
// the bridges do.
const lockDir = "/run/cnisuite/bridge-locks"

// bridgeLockWait bounds the wait for the lock.
const bridgeLockWait = 30 * time.Second

// lockBridge takes the bridge's lock, shared or exclusive, when
// removeEmptyBridge is on and returns its release (a no-op otherwise).
func (at *attach) lockBridge(ctx context.Context, shared bool) (func(), error) {
	if !at.conf.RemoveEmptyBridge {
		return func() {}, nil
	}
	// Rootless, the locks stay under /run/cnisuite when the runtime made
	// /run writable (the bridges are in its own namespace, and so is that
	// /run), else under $XDG_RUNTIME_DIR/cni.
	dir := rootless.StateDir(lockDir, "bridge-locks", at.args.Env)
	root, err := statedir.OpenRoot(dir, true, 0o700)
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "removeEmptyBridge: lock directory: %w%s", err, rootless.Hint("XDG_RUNTIME_DIR"))
	}
	defer root.Close()
	lock := root.Lock
	if shared {
		lock = root.LockShared
	}
	f, err := lock(ctx, at.conf.BrName, bridgeLockWait)
	if errors.Is(err, statedir.ErrLockTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return nil, types.Errorf(types.ErrTryAgain, "removeEmptyBridge: bridge %q: %w", at.conf.BrName, err)
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "removeEmptyBridge: lock of bridge %q: %w", at.conf.BrName, err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// removeBridgeIfEmpty deletes the bridge, with its addresses, when no port
// is left (removeEmptyBridge), under the bridge's lock. Called by DEL once
// the attachment's port, lease and rules are gone.
func (at *attach) removeBridgeIfEmpty(ctx context.Context) error {
	if !at.conf.RemoveEmptyBridge || at.conf.BrName == "" {
		return nil
	}
	defer at.tm.Step("removeEmptyBridge")()
	release, err := at.lockBridge(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if err := link.DeleteBridgeIfNoPorts(at.host, at.conf.BrName); err != nil {
		return fmt.Errorf("removeEmptyBridge: %w", err)
	}
	return nil
}
