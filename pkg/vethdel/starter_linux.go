package vethdel

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/netfilter"
)

// Helper is the starter's side of the DEL helper (see helper_linux.go): the
// pipe that tells it which link to delete, the outcome it answers, and the
// Unix socket over which it takes the sockets whose close would wait.
type Helper struct {
	index    *os.File      // its stdin
	result   chan error    // its answer, once: nil when the link is deleted
	answered chan struct{} // closed once it answered
	mu       sync.Mutex    // guards sock and asked
	sock     int           // our end of the Unix socket; -1 once released
	asked    bool          // the index was written
	answer   <-chan string // its stdout's one line ("" when it ended without)
}

// Start starts the DEL helper for the container netns at path,
// and makes it the taker of the netfilter sockets this process closes
// after deleting rules. It returns nil, having started nothing, when path
// is empty or gone or the helper cannot start: DEL then deletes
// synchronously and a linger helper takes the sockets.
func Start(path string) *Helper {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	theirs := os.NewFile(uintptr(pair[1]), "held sockets")
	defer theirs.Close()
	h, err := spawn(path, theirs)
	if err != nil {
		unix.Close(pair[0])
		return nil
	}
	h.sock = pair[0]
	netfilter.SetHandOff(h.hold)
	return h
}

// spawn starts the process with held as its descriptor 3.
func spawn(path string, held *os.File) (*Helper, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer inR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		inW.Close()
		return nil, err
	}
	defer outW.Close()
	cmd := helper.Command(HelperName, path, "3")
	cmd.Stdin, cmd.Stdout, cmd.ExtraFiles = inR, outW, []*os.File{held}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	// Reaped by whoever outlives us: it exits only after we let go.
	go func() { _ = cmd.Wait() }()
	h := &Helper{index: inW, result: make(chan error, 1), answered: make(chan struct{}), answer: readLine(outR)}
	go h.relay()
	return h, nil
}

// readLine delivers the first line r yields ("" at EOF), then closes r.
func readLine(r *os.File) <-chan string {
	ch := make(chan string, 1)
	go func() {
		defer r.Close()
		line, _ := bufio.NewReader(r).ReadString('\n')
		ch <- strings.TrimSpace(line)
	}()
	return ch
}

// relay turns the helper's answer into result.
func (h *Helper) relay() {
	defer close(h.answered)
	switch a := <-h.answer; a {
	case "ok":
		h.result <- nil
	case "":
		h.result <- errors.New("the DEL helper ended without an answer")
	default:
		h.result <- errors.New(a)
	}
}

// deleteLink asks the helper to delete the link of the container netns
// with this index, once; false when it cannot be asked.
func (h *Helper) deleteLink(index int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asked || h.sock < 0 {
		return false
	}
	h.asked = true
	_, err := fmt.Fprintf(h.index, "%d\n", index)
	return err == nil
}

// wait waits, bounded, for the helper's answer to deleteLink.
func (h *Helper) wait() {
	select {
	case <-h.answered:
	case <-time.After(deleteAnnounceTimeout):
	}
}

// hold hands the helper a socket whose last close would wait (see
// netfilter.SetHandOff); the message in flight holds a reference until the
// helper takes it.
func (h *Helper) hold(fd int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sock < 0 {
		return false
	}
	return unix.Sendmsg(h.sock, []byte{0}, unix.UnixRights(fd), nil, unix.MSG_NOSIGNAL) == nil
}

// Release tells the helper there is nothing (more) to delete and lets go
// of the sockets' channel: the helper exits once its deletion is done.
// Nil-safe; a DEL defers it.
func (h *Helper) Release() {
	if h == nil {
		return
	}
	netfilter.SetHandOff(nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.asked {
		h.asked = true
		fmt.Fprintln(h.index, "0")
	}
	h.index.Close()
	if h.sock >= 0 {
		unix.Close(h.sock)
		h.sock = -1
	}
}
