package firewall

import (
	"io"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// Closing the netfilter socket of a transaction that deleted rules, chains
// or map elements waits in the kernel (nft_rcv_nl_event flushes the
// per-netns nf_tables destroy work, which sits in synchronize_rcu) for an
// RCU grace period: 5 to 20 ms on a loaded node. Process exit closes the
// socket the same way, so a plugin's DEL would return only after it. What
// is left at that point is freeing memory: the deletions were committed,
// and no packet sees the rules any more. So the socket is handed to a
// helper process (this binary, executed again with lingerEnv set), which
// holds the last reference and sits out the wait; the caller closes its
// own copy at once and does not wait. When the helper cannot start, the
// socket is closed here, with the wait.

// lingerEnv marks the helper process.
const lingerEnv = "CNISUITE_FIREWALL_LINGER_HELPER"

func init() {
	if os.Getenv(lingerEnv) == "1" {
		lingerMain()
	}
}

// lingerMain is the helper: it holds the socket (fd 3) until its parent
// has let go of its own copy (EOF on stdin), then exits; the kernel's wait
// happens in this exit.
func lingerMain() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// closeDetached closes fd without waiting for the kernel's deferred
// release, and reports whether it could; false leaves fd open.
func closeDetached(fd int) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
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
	cmd := exec.Command(exe)
	cmd.Env = []string{lingerEnv + "=1"}
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
