package store

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// lockWait bounds how long Lock waits when ctx has no deadline.
const lockWait = 2 * time.Minute

// Lock creates the network directory and its lock file when missing, takes
// the lock — flock(2) on <dir>/lock, the same lock the reference takes —
// removes what a crashed run left behind, and rebuilds the index when it is
// missing or stale. One ADD, DEL, CHECK or GC holds it throughout.
func (s *Store) Lock(ctx context.Context) error {
	if s.lock != nil {
		return errors.New("store: lock already held")
	}
	if _, err := s.openNet(true); err != nil {
		return errors.Join(err, s.Close())
	}
	f, err := s.net.Lock(ctx, lockName, lockWait)
	switch {
	case errors.Is(err, statedir.ErrLockTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return errors.Join(types.Errorf(types.ErrTryAgain, "lease directory lock: %w", err), s.Close())
	case err != nil:
		return errors.Join(ioErr("opening lock file", err), s.Close())
	}
	s.lock, s.dirty, s.broken, s.noIndex = f, false, false, false
	for _, step := range []func() error{s.cleanTemporaries, s.forgetEarlierBoots, s.ensureIndex} {
		if err := step(); err != nil {
			// A half-done step must not be stamped as matching.
			s.broken = true
			return errors.Join(err, s.Unlock())
		}
	}
	return nil
}

// Commit records that the index matches the lease files after changes.
// Unlock commits too; a caller that must undo its changes when the commit
// fails calls it while it still holds the lock.
// After a change that failed half-way it stamps nothing, so the next Lock
// rebuilds the index from the lease files.
func (s *Store) Commit() error {
	if !s.dirty || s.broken || s.noIndex {
		return nil
	}
	return s.stamp()
}

// Unlock commits pending changes and releases the lock.
func (s *Store) Unlock() error {
	if s.lock == nil {
		return nil
	}
	err := s.Commit()
	if uerr := unix.Flock(int(s.lock.Fd()), unix.LOCK_UN); uerr != nil {
		err = errors.Join(err, ioErr("unlocking", uerr))
	}
	if cerr := s.lock.Close(); cerr != nil {
		err = errors.Join(err, ioErr("closing lock file", cerr))
	}
	s.lock = nil
	return errors.Join(err, s.Close())
}

// cleanTemporaries removes temporary files a crashed run may have left.
// It looks before it removes: on a read-only file system unlink(2) fails
// even for a name that does not exist, and a DEL with nothing to release
// must not fail over a file the user never heard of.
func (s *Store) cleanTemporaries() error {
	if there, err := s.net.Exists(leaseTmpName); err != nil || !there {
		return err
	}
	if err := s.net.Remove(leaseTmpName); err != nil {
		return ioErr("removing the temporary lease file a crashed run left", err)
	}
	return nil
}
