package statedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLockTimeout is the cause of Lock's error when the lock stayed held
// for the whole wait.
var ErrLockTimeout = errors.New("lock held by another process for the whole wait")

// Lock opens (creating it 0600) the file name and takes an exclusive
// flock(2) on it, waiting until ctx ends or wait passes. Closing the file
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
// waiting until ctx ends or wait passes; f is closed on failure.
//
// The wait is the kernel's: a blocking flock(2) in a goroutine of its own,
// which the kernel wakes when the lock is handed on. Polling, as this once
// did, woke every waiter every few milliseconds; with a hundred calls
// waiting for one lock at once (110 pods after a node's reboot, one lease
// directory), those wakeups took the CPU the holder needed to finish, and
// the convoy tripled bridge's CPU per pod (test/bench/RESULTS.md, round
// 13). A caller that stops waiting leaves the goroutine to close f, and so
// let go of the lock, once the kernel gives it.
func lockFile(ctx context.Context, f *os.File, wait time.Duration, how int) (*os.File, error) {
	err := flock(f, how|unix.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	w := &lockWaiter{f: f, done: make(chan error, 1)}
	go w.block(how)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var cause error
	select {
	case err := <-w.done:
		return w.taken(err)
	case <-timer.C:
		cause = fmt.Errorf("%s: %w", f.Name(), ErrLockTimeout)
	case <-ctx.Done():
		cause = fmt.Errorf("waiting for lock %s: %w", f.Name(), ctx.Err())
	}
	if !w.abandon() {
		return w.taken(<-w.done) // the kernel answered first
	}
	return nil, cause
}

// flock is flock(2) on f, again after a signal interrupted it.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// lockWaiter is one blocking flock(2) and the caller waiting for it.
type lockWaiter struct {
	f    *os.File
	mu   sync.Mutex
	gone bool       // the caller stopped waiting: f is the goroutine's to close
	done chan error // the outcome, for a caller still waiting (one slot)
}

func (w *lockWaiter) block(how int) {
	err := flock(w.f, how)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		w.f.Close() // lets go of the lock if it was taken
		return
	}
	w.done <- err
}

// abandon stops waiting; false when the outcome is in already.
func (w *lockWaiter) abandon() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.done) > 0 {
		return false
	}
	w.gone = true
	return true
}

func (w *lockWaiter) taken(err error) (*os.File, error) {
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("locking %s: %w", w.f.Name(), err)
	}
	return w.f, nil
}
