package sitter

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
)

// name is the sitter's abstract socket name; its suffix is the version of
// the protocol (the operations above and their answers).
var name = "cnisuite-sitter-1"

// idle is how long a sitter this process starts waits for another caller
// before it exits.
var idle = 2 * time.Second

// startTimeout bounds the wait for a started sitter's first answer.
const startTimeout = 5 * time.Second

// errNotOurs: the name is held by a process of another user.
var errNotOurs = errors.New("the sitter's name is held by another user's process")

// Client is a process's connection to the sitter, made on first use. One
// deletion at a time: its answer is the next message on the connection.
type Client struct {
	mu   sync.Mutex
	conn *net.UnixConn // nil: not connected
}

var process Client

// Default returns the process's client.
func Default() *Client { return &process }

// Hold hands fd to the sitter of this process's client (see Client.Hold).
func Hold(fd int) bool { return process.Hold(fd) }

// Warm connects in the background — starting a sitter when none runs —
// so that a request soon after does not wait for a start.
func (c *Client) Warm() {
	go func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.connect(true)
	}()
}

// Hold hands fd to the sitter, closes this process's copy, then lets the
// sitter close its own: the kernel's wait at the last close is the
// sitter's. When no sitter answers, it starts one that inherits fd. false,
// with fd left open, when neither worked.
func (c *Client) Hold(fd int) bool {
	c.mu.Lock()
	err := c.send(false, []byte{opHold}, fd)
	c.mu.Unlock()
	if err == nil {
		unix.Close(fd)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.conn != nil {
			// On failure the sitter closes it when the connection ends.
			_, _ = c.conn.Write([]byte{opRelease})
		}
		return true
	}
	release, err := start([]int{fd}, false)
	if err != nil {
		return false
	}
	unix.Close(fd)
	release()
	return true
}

// DeleteLink asks the sitter to delete the link with this index in the
// network namespace open at nsfd. The channel yields the outcome once the
// deletion returned (nil: deleted or already gone), then is closed. false:
// no sitter took the request.
func (c *Client) DeleteLink(nsfd, index int) (<-chan error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.send(true, []byte(fmt.Sprintf("%c%d", opDelete, index)), nsfd) != nil {
		return nil, false
	}
	conn := c.conn
	outcome := make(chan error, 1)
	go func() {
		defer close(outcome)
		buf := make([]byte, 512)
		n, err := conn.Read(buf)
		switch answer := string(buf[:n]); {
		case err != nil || n == 0:
			outcome <- errors.New("the sitter ended without an answer")
		case answer != "ok":
			outcome <- errors.New(answer)
		}
	}()
	return outcome, true
}

// Close ends the connection; a later request makes a new one.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

func (c *Client) drop() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// send sends msg with fd, over a new connection when the one it had broke
// (a sitter that exited when idle). Called with mu held; startIfNone
// starts a sitter when none answers.
func (c *Client) send(startIfNone bool, msg []byte, fd int) error {
	var err error
	for try := 0; try < 2; try++ {
		var conn *net.UnixConn
		if conn, err = c.connect(startIfNone); err != nil {
			return err
		}
		if _, _, err = conn.WriteMsgUnix(msg, unix.UnixRights(fd), nil); err == nil {
			return nil
		}
		c.drop()
	}
	return err
}

// connect returns the connection, making one when there is none.
// Called with mu held.
func (c *Client) connect(startIfNone bool) (*net.UnixConn, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	conn, err := dial()
	if err != nil && startIfNone && errors.Is(err, syscall.ECONNREFUSED) {
		if _, err = start(nil, true); err == nil {
			conn, err = dial()
		}
	}
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

// dial connects to the sitter, if one of this user runs.
func dial() (*net.UnixConn, error) {
	conn, err := net.DialUnix("unixpacket", nil, address(name))
	if err != nil {
		return nil, err
	}
	if !peerOurs(conn) {
		conn.Close()
		return nil, errNotOurs
	}
	return conn, nil
}

// start starts a sitter that closes held once release was called (they
// stay open here until the caller closes them); with wait, it returns once
// the sitter listens or found one that does.
func start(held []int, wait bool) (release func(), err error) {
	cmd := helper.Command(HelperName, name, strconv.Itoa(int(idle/time.Millisecond)),
		strconv.Itoa(int(closeAge/time.Millisecond)), strconv.Itoa(len(held)))
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	for _, fd := range held {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(dup), "held")
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	stdin, releaseW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	cmd.Stdin = stdin
	var out, w *os.File
	if wait {
		if out, w, err = os.Pipe(); err != nil {
			releaseW.Close()
			return nil, err
		}
		defer out.Close()
		defer w.Close()
		cmd.Stdout = w
	}
	if err := cmd.Start(); err != nil {
		releaseW.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait() }() // reaps it in a long-lived caller
	release = func() { releaseW.Close() }
	if out == nil {
		return release, nil
	}
	release()
	w.Close() // the sitter's copy is the only writer left
	return release, firstAnswer(out)
}

// firstAnswer reads a started sitter's answer, bounded.
func firstAnswer(out *os.File) error {
	_ = out.SetReadDeadline(time.Now().Add(startTimeout))
	line, err := bufio.NewReader(out).ReadString('\n')
	switch line = strings.TrimSpace(line); line {
	case "ready", "taken":
		return nil
	case "":
		return fmt.Errorf("starting the sitter: no answer: %v", err)
	default:
		return fmt.Errorf("starting the sitter: %s", line)
	}
}
