package statedir

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Shared locks of the same file are held at once; an exclusive one waits
// for every shared holder, and a shared one for the exclusive holder.
func TestLockShared(t *testing.T) {
	d, err := OpenRoot(t.TempDir(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	a, err := d.LockShared(ctx, "l", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.LockShared(ctx, "l", 10*time.Millisecond)
	if err != nil {
		t.Fatalf("a second shared lock beside the first: %v", err)
	}
	if _, err := d.Lock(ctx, "l", 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("exclusive lock while two shared are held = %v, want %v", err, ErrLockTimeout)
	}
	a.Close()
	if _, err := d.Lock(ctx, "l", 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("exclusive lock while one shared is held = %v, want %v", err, ErrLockTimeout)
	}
	b.Close()
	x, err := d.Lock(ctx, "l", time.Second)
	if err != nil {
		t.Fatalf("exclusive lock once the shared ones went: %v", err)
	}
	if _, err := d.LockShared(ctx, "l", 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("shared lock while the exclusive is held = %v, want %v", err, ErrLockTimeout)
	}
	x.Close()
}

// A waiter gets the lock when its holder lets go; one that stopped waiting
// (its time ran out, or its context ended) never keeps the lock the kernel
// hands it later. (That waiters no longer poll is measured, not tested:
// the bursts' exit records, RESULTS.md round 13.)
func TestLockWaitersAndQuitters(t *testing.T) {
	d, err := OpenRoot(t.TempDir(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	holder, err := d.Lock(ctx, "l", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock(ctx, "l", 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("lock while held = %v, want %v", err, ErrLockTimeout)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := d.LockShared(cctx, "l", 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock whose context ended = %v, want %v", err, context.Canceled)
	}
	got := make(chan error, 1)
	go func() {
		f, err := d.Lock(ctx, "l", 10*time.Second)
		if err == nil {
			f.Close()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	holder.Close()
	if err := <-got; err != nil {
		t.Fatalf("waiter after the holder let go: %v", err)
	}
	// The two that gave up are handed the lock in turn and let it go.
	f, err := d.Lock(ctx, "l", 5*time.Second)
	if err != nil {
		t.Fatalf("lock after every waiter and quitter: %v", err)
	}
	f.Close()
}
