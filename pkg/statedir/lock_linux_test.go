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
