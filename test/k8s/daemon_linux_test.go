package k8s

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is a long-lived program running inside the node.
type daemon struct {
	name string
	pid  int
	out  *syncBuffer
	done chan struct{} // closed when it exits
	err  error         // its exit, once done is closed
}

// start runs a long-lived program inside the node, bounded to 20 minutes,
// and stops it, by its PID, when the test ends.
func (n *node) start(name string, args ...string) *daemon {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	cmd := n.command(ctx, name, args...)
	d := &daemon{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Start(); err != nil {
		cancel()
		n.t.Fatalf("starting %s: %v", name, err)
	}
	d.pid = cmd.Process.Pid
	go func() {
		d.err = cmd.Wait()
		cancel()
		close(d.done)
	}()
	n.t.Cleanup(d.stop)
	return d
}

// exited tells whether the program has exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the program to exit and tells whether it did.
func (d *daemon) wait(timeout time.Duration) bool {
	select {
	case <-d.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop ends the program by its PID: SIGTERM, then SIGKILL after 15 s.
// nsenter without --pid does not fork: the PID is the program's.
func (d *daemon) stop() {
	if d.exited() {
		return
	}
	_ = syscall.Kill(d.pid, syscall.SIGTERM) // it may exit meanwhile: then nothing to do
	if !d.wait(15 * time.Second) {
		_ = syscall.Kill(d.pid, syscall.SIGKILL) // likewise
		d.wait(15 * time.Second)
	}
}

// tail is the end of what the program wrote, for a failure message.
func (d *daemon) tail(lines int) string {
	all := strings.Split(strings.TrimRight(d.out.String(), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// syncBuffer collects a program's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
