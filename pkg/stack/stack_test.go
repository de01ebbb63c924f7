package stack

import (
	"runtime"
	"testing"
)

// stackInUse is the runtime's count of bytes in goroutine stacks.
func stackInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}

// deep recurses until about n bytes of stack are in use below it.
//
//go:noinline
func deep(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n <= 256 {
		return int(pad[0])
	}
	return deep(n-256) + int(pad[1])
}

// growth measures, on a fresh goroutine, how much the stacks in use grow
// across Presize and then across work needing 24 KiB of stack.
func growth() (byPresize, byWork int64) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		before := stackInUse()
		Presize()
		presized := stackInUse()
		deep(24 << 10)
		byPresize, byWork = int64(presized-before), int64(stackInUse()-presized)
	}()
	<-done
	return byPresize, byWork
}

// TestPresizeGrowsOnce: after Presize, a goroutine holds a stack of at
// least 32 KiB more than before, and work needing 24 KiB of stack grows it
// no further. Without the frame (a compiler that optimised it away, or a
// Presize that does nothing) the first check fails, and the work grows the
// stack. The counter is the whole process's: another goroutine's stack
// can only add to it, so the smallest of a few trials is the one kept.
func TestPresizeGrowsOnce(t *testing.T) {
	minPresize, minWork := growth()
	for range 4 {
		p, w := growth()
		minPresize, minWork = min(minPresize, p), min(minWork, w)
	}
	if minPresize < frameSize {
		t.Errorf("Presize grew the stacks in use by %d bytes, want at least %d", minPresize, frameSize)
	}
	if minWork != 0 {
		t.Errorf("24 KiB of calls after Presize grew the stacks in use by %d bytes, want 0", minWork)
	}
}
