// Package stack sizes a goroutine's stack before its work needs it.
//
// A goroutine starts with a stack of a few KiB and the runtime doubles it
// whenever a call would overflow it, copying the whole stack each time: it
// walks every frame (function metadata, stack maps) to move the pointers
// into it. A plugin's call is one short life of deep stacks — JSON
// decoding by reflection, netlink, namespace switches — and no garbage
// collection ever runs to shrink them again, so each goroutine of a call
// paid three or four copies, each deeper than the last: 0.55–0.58 ms of
// CPU per bridge ADD, 0.25–0.33 ms per tuning or portmap ADD (perf, 60
// sequential ADDs of the nftables chain; RESULTS.md round 15). Growing the
// stack once, at the start, while only a few frames are on it, costs one
// copy of almost nothing; with it the copies cost 0.35–0.37, 0.17–0.23
// ms (what is left: package inits on the main goroutine before Presize,
// and goroutines this package is not called on).
package stack

// frameSize is the frame Presize makes. The runtime sizes the new stack
// to the next power of two that holds what is in use plus this frame: 64
// KiB, which the deepest goroutine of a plugin call does not outgrow.
const frameSize = 32 << 10

// Presize grows the calling goroutine's stack to hold at least frameSize
// more bytes, in one step. A stack already that large stays as it is.
func Presize() { presize(0) }

// presize needs a frame of frameSize bytes; the index the caller passes
// keeps the compiler from proving the array unused.
//
//go:noinline
func presize(i int) byte {
	var frame [frameSize]byte
	frame[i] = 1
	return frame[(i+frameSize/2)%frameSize]
}
