package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is a long-lived command running inside a node.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when it exits
	err  error         // its exit, once done is closed
}

// start runs a long-lived command inside the node, bounded to 10 minutes.
func (n *node) start(name string, args ...string) *proc {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	p := &proc{name: name, cmd: n.command(ctx, name, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		cancel()
		n.t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	return p
}

// exited tells whether the command has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the command to exit and tells whether it did.
func (p *proc) wait(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop ends the command by its PID: SIGTERM, then SIGKILL after 15 s.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // it may exit meanwhile: then nothing to do
	if !p.wait(15 * time.Second) {
		_ = p.cmd.Process.Kill() // likewise
		p.wait(15 * time.Second)
	}
}

// syncBuffer collects a background command's output.
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
