package statedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLockTimeout is the cause of Lock's error when the lock stayed held
// for the whole wait.
var ErrLockTimeout = errors.New("lock held by another process for the whole wait")

// Lock opens (creating it 0600) the file name and takes an exclusive
// flock(2) on it, polling until ctx ends or wait passes. Closing the file
// releases the lock.
func (d *Dir) Lock(ctx context.Context, name string, wait time.Duration) (*os.File, error) {
	f, err := d.OpenFile(name, unix.O_RDONLY|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	return lockFile(ctx, f, wait, unix.LOCK_EX)
}

// LockShared is Lock with a shared flock(2): any number of holders of the
// shared lock at once, none while someone holds it exclusively (Lock).
func (d *Dir) LockShared(ctx context.Context, name string, wait time.Duration) (*os.File, error) {
	f, err := d.OpenFile(name, unix.O_RDONLY|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	return lockFile(ctx, f, wait, unix.LOCK_SH)
}

// LockExisting is Lock on a file that must exist already: a missing one
// is fs.ErrNotExist, and nothing is created.
func (d *Dir) LockExisting(ctx context.Context, name string, wait time.Duration) (*os.File, error) {
	f, err := d.OpenFile(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return lockFile(ctx, f, wait, unix.LOCK_EX)
}

// lockFile takes a flock(2) of kind how (LOCK_EX or LOCK_SH) on f,
// polling until ctx ends or wait passes; f is closed on failure.
func lockFile(ctx context.Context, f *os.File, wait time.Duration, how int) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 5*time.Millisecond) {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			f.Close()
			return nil, fmt.Errorf("%s: %w", f.Name(), ErrLockTimeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", f.Name(), ctx.Err())
		case <-time.After(pause):
		}
	}
}
