package nftmodel

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestVanished: a transaction's ENOENT is what vanished; other errors are
// not, and are not retried.
func TestVanished(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"transaction", fmt.Errorf("nftables transaction of 8 messages: %w", unix.ENOENT), true},
		{"busy", fmt.Errorf("nftables transaction of 8 messages: %w", unix.EBUSY), false},
	} {
		if got := vanished(tc.err); got != tc.want {
			t.Errorf("%s: vanished(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	tries := 0
	err := RetryVanished(func() error { tries++; return unix.ENOENT })
	if !errors.Is(err, unix.ENOENT) || tries != vanishTries {
		t.Errorf("RetryVanished of a removal always vanishing = %v after %d tries, want ENOENT after %d", err, tries, vanishTries)
	}
	tries = 0
	if err := RetryVanished(func() error { tries++; return unix.EPERM }); !errors.Is(err, unix.EPERM) || tries != 1 {
		t.Errorf("RetryVanished of another error = %v after %d tries, want it at once", err, tries)
	}
}
