package nodens

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Daemon is a long-lived program running inside the node.
type Daemon struct {
	// Name is the program's, for messages.
	Name string
	pid  int
	out  *syncBuffer
	done chan struct{} // closed when it exits
	err  error         // its exit, once done is closed
}

// Start runs a long-lived program inside the node, bounded to 20 minutes,
// and stops it, by its PID, when the node's test ends (before the node's
// teardown).
func (n *Node) Start(name string, args ...string) *Daemon {
	n.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	cmd := n.command(ctx, name, args...)
	d := &Daemon{Name: name, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Start(); err != nil {
		cancel()
		n.T.Fatalf("starting %s: %v", name, err)
	}
	d.pid = cmd.Process.Pid
	go func() {
		d.err = cmd.Wait()
		cancel()
		close(d.done)
	}()
	n.owner.Cleanup(d.Stop)
	return d
}

// Exited tells whether the program has exited.
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Err is how the program exited (nil while it runs).
func (d *Daemon) Err() error {
	if !d.Exited() {
		return nil
	}
	return d.err
}

// Wait waits up to timeout for the program to exit and tells whether it did.
func (d *Daemon) Wait(timeout time.Duration) bool {
	select {
	case <-d.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Signal sends sig to the program, by its PID (SIGKILL stands in for a
// crash); Wait tells when it has exited.
func (d *Daemon) Signal(sig syscall.Signal) error {
	if d.Exited() {
		return fmt.Errorf("%s already exited: %v", d.Name, d.err)
	}
	return syscall.Kill(d.pid, sig)
}

// Stop ends the program by its PID: SIGTERM, then SIGKILL after 15 s.
// nsenter without --pid does not fork: the PID is the program's.
func (d *Daemon) Stop() {
	if d.Exited() {
		return
	}
	_ = syscall.Kill(d.pid, syscall.SIGTERM) // it may exit meanwhile: then nothing to do
	if !d.Wait(15 * time.Second) {
		_ = syscall.Kill(d.pid, syscall.SIGKILL) // likewise
		d.Wait(15 * time.Second)
	}
}

// Output is all the program wrote, stdout and stderr, so far.
func (d *Daemon) Output() string { return d.out.String() }

// Tail is the last lines the program wrote, for a failure message.
func (d *Daemon) Tail(lines int) string {
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
