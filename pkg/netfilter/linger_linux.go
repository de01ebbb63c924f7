package netfilter

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
)

// Closing the netfilter socket of a transaction that deleted rules, chains
// or map elements waits in the kernel (nft_rcv_nl_event flushes the
// per-netns nf_tables destroy work, which sits in synchronize_rcu) for an
// RCU grace period: 5 to 20 ms on a loaded node. Process exit closes the
// socket the same way, so a plugin's DEL would return only after it. What
// is left at that point is freeing memory: the deletions were committed,
// and no packet sees the rules any more. So the socket is handed to a
// helper process (this binary, run as helper LingerHelper), which holds the
// last reference and sits out the wait; the caller closes its own copy at
// once and does not wait. When the helper cannot start, the socket is
// closed here, with the wait.

// LingerHelper is the name of the helper that holds a socket through the
// kernel's wait. Every binary that uses this package dispatches it:
//
//	helper.Dispatch(helper.Set{netfilter.LingerHelper: netfilter.Linger})
const LingerHelper = "netfilter-linger"

// Linger is the helper: it holds the socket (fd 3) until its starter has
// let go of its own copy (EOF on stdin) and returns; the kernel's wait
// happens in the process exit that follows.
func Linger(_ []string, stdin io.Reader) error {
	_, err := io.Copy(io.Discard, stdin)
	return err
}

// handOff, when set, is a process that outlives the caller anyway and
// takes the sockets instead of a linger helper of their own (bridge's DEL
// hands them to the helper that deletes its veth): it reports whether it
// took fd, having made the kernel hold a reference of its own.
var handOff struct {
	sync.Mutex
	to func(fd int) bool
}

// SetHandOff makes closeDetached give sockets to f before it starts a
// helper; nil goes back to starting one.
func SetHandOff(f func(fd int) bool) {
	handOff.Lock()
	defer handOff.Unlock()
	handOff.to = f
}

func handedOff(fd int) bool {
	handOff.Lock()
	defer handOff.Unlock()
	return handOff.to != nil && handOff.to(fd)
}

// closeDetached closes fd without waiting for the kernel's deferred
// release, and reports whether it could; false leaves fd open.
func closeDetached(fd int) bool {
	if handedOff(fd) {
		unix.Close(fd)
		return true
	}
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	defer r.Close()
	defer w.Close()
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return false
	}
	sock := os.NewFile(uintptr(dup), "nfnetlink")
	defer sock.Close()
	cmd := helper.Command(LingerHelper)
	cmd.Stdin = r
	cmd.ExtraFiles = []*os.File{sock}
	if err := cmd.Start(); err != nil {
		return false
	}
	go func() { _ = cmd.Wait() }() // reaps it in a long-lived caller
	// Both our copies go before the helper learns it may exit, so that
	// its close is the last one.
	_ = sock.Close()
	unix.Close(fd)
	_ = w.Close()
	return true
}
