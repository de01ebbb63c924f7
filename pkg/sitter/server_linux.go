package sitter

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
)

// HelperName is the sitter's helper name. Its arguments are the socket
// name, the idle time and the close age (closeAge) in milliseconds, and
// the number of descriptors it inherited (3 onwards) to close; it answers "ready" or "taken" (another
// sitter has the name) on stdout, then lets go of stdout.
const HelperName = "cnisuite-sitter"

// Messages a caller sends: one operation byte, then its argument.
const (
	opHold    = 'h' // hold the descriptors that come with the message
	opRelease = 'r' // the caller closed its copies: close what it handed over
	opDelete  = 'd' // delete link <decimal index> in the namespace that comes with it
)

// maxDeleting bounds the deletions in flight: each holds a thread in the
// kernel's barrier, and barriers that overlap end together anyway.
const maxDeleting = 16

// maxRights is the most descriptors one message may carry.
const maxRights = 8

// Serve is the sitter's body (helper HelperName). It closes the
// descriptors it inherited once its starter has closed its own copies
// (EOF on stdin), so that the starter's close is never the last one.
func Serve(args []string, stdin io.Reader) error {
	if len(args) != 4 {
		return fmt.Errorf("want a name, an idle time, a close age and a count, got %q", args)
	}
	idleMs, err1 := strconv.Atoi(args[1])
	ageMs, err2 := strconv.Atoi(args[2])
	inherited, err3 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil || idleMs <= 0 || ageMs <= 0 || inherited < 0 || inherited > maxRights {
		return fmt.Errorf("bad idle time, close age or count in %q", args)
	}
	closeAge = time.Duration(ageMs) * time.Millisecond
	l, err := net.ListenUnix("unixpacket", address(args[0]))
	// Listening first: once an inherited descriptor is closed, callers
	// find this sitter.
	s := newServer(time.Duration(idleMs) * time.Millisecond)
	defer s.drain()
	if inherited > 0 {
		s.work.Add(1)
		go func() {
			defer s.work.Done()
			_, _ = io.Copy(io.Discard, stdin)
			for fd := 3; fd < 3+inherited; fd++ {
				s.closeLater(fd)
			}
		}()
	}
	answer := "ready"
	if errors.Is(err, unix.EADDRINUSE) {
		answer = "taken"
	} else if err != nil {
		answer = err.Error()
	}
	fmt.Fprintln(os.Stdout, answer)
	letGoOfStdout()
	if err != nil {
		return nil // the inherited descriptors are closed all the same
	}
	s.run(l)
	return nil
}

// address is the abstract socket address of name.
func address(name string) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + name, Net: "unixpacket"}
}

// letGoOfStdout points descriptor 1 at /dev/null, so that a starter
// reading it sees EOF.
func letGoOfStdout() {
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Dup3(null, 1, 0)
	unix.Close(null)
}

type server struct {
	idle     time.Duration
	last     atomic.Int64  // the time of the last message, in Unix nanoseconds
	deleting chan struct{} // a slot per deletion in flight
	toClose  chan int
	closed   chan struct{} // closed when the closer has closed everything
	mu       sync.Mutex    // guards conns
	conns    map[*net.UnixConn]bool
	work     sync.WaitGroup // connections being served
}

func newServer(idle time.Duration) *server {
	s := &server{
		idle: idle, deleting: make(chan struct{}, maxDeleting),
		toClose: make(chan int, 1024), closed: make(chan struct{}),
		conns: map[*net.UnixConn]bool{},
	}
	s.touch()
	go s.closer()
	return s
}

func (s *server) touch() { s.last.Store(time.Now().UnixNano()) }

// run accepts callers until nothing came for the idle time and no
// deletion is in flight, then stops listening.
func (s *server) run(l *net.UnixListener) {
	defer l.Close()
	for {
		deadline := time.Unix(0, s.last.Load()).Add(s.idle)
		if !time.Now().Before(deadline) {
			if len(s.deleting) == 0 {
				return
			}
			deadline = time.Now().Add(s.idle) // a deletion's answer touches it
		}
		_ = l.SetDeadline(deadline)
		c, err := l.AcceptUnix()
		if err == nil {
			s.touch()
			s.serve(c)
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return
		}
	}
}

// drain ends every connection, waits for the deletions in flight and
// closes what it holds.
func (s *server) drain() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.work.Wait()
	close(s.toClose)
	<-s.closed
}

// serve serves one caller in a goroutine of its own.
func (s *server) serve(c *net.UnixConn) {
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
		if peerOurs(c) {
			s.requests(c)
		}
	}()
}

// requests answers c's messages until it hangs up. What it is handed
// stays open until the caller says it closed its own copies (or hangs
// up): were the sitter's close first, the caller's would be the last one,
// and wait.
func (s *server) requests(c *net.UnixConn) {
	buf, oob := make([]byte, 32), make([]byte, unix.CmsgSpace(4*maxRights))
	var held []int
	defer func() { s.closeAll(held) }()
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		fds := rights(oob[:oobn])
		if err != nil || n == 0 {
			s.closeAll(fds)
			return
		}
		s.touch()
		switch buf[0] {
		case opHold:
			held = append(held, fds...)
		case opRelease:
			s.closeAll(append(held, fds...))
			held = nil
		case opDelete:
			answer := s.delete(fds, string(buf[1:n]))
			s.touch()
			if _, err := c.Write([]byte(answer)); err != nil {
				return
			}
		default:
			s.closeAll(fds)
			return
		}
	}
}

// delete deletes the link an opDelete names, and returns the answer.
func (s *server) delete(fds []int, index string) string {
	if len(fds) != 1 {
		s.closeAll(fds)
		return fmt.Sprintf("a deletion needs one namespace, got %d descriptors", len(fds))
	}
	defer unix.Close(fds[0])
	s.deleting <- struct{}{}
	defer func() { <-s.deleting }()
	if err := deleteByIndex(fds[0], index); err != nil {
		return fmt.Sprintf("deleting link %s: %v", index, err)
	}
	return "ok"
}

func deleteByIndex(nsfd int, index string) error {
	idx, err := strconv.Atoi(index)
	if err != nil || idx <= 0 {
		return fmt.Errorf("bad index %q", index)
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(nsfd), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	err = h.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}})
	if err != nil && !link.IsNotFound(err) {
		return err
	}
	return nil
}

func (s *server) closeAll(fds []int) {
	for _, fd := range fds {
		s.closeLater(fd)
	}
}

// closeLater queues fd for the closer, or closes it here when the queue
// is full.
func (s *server) closeLater(fd int) {
	select {
	case s.toClose <- fd:
	default:
		unix.Close(fd)
	}
}

// closeAge is how long the closer keeps a descriptor before closing it,
// at least (and twice that at most).
//
// Closed at once, the sockets slowed the veth deletions of the DELs
// running meanwhile: bridge's DEL took 4.7-8.7 ms instead of 3.2-3.4 ms
// (test/bench/profile/steps.sh, the announcement wait). As we read the
// kernel — not checked in its source here — the last close of a netfilter
// socket flushes the nf_tables destroy work (an RCU grace period) holding
// the namespace's nf_tables commit mutex, which every nftables transaction
// takes, and so does a network device's unregistration
// (nf_tables_netdev_event, under the RTNL lock). Some hundreds of
// milliseconds after the deletion, the work is long done and the flush
// returns at once.
var closeAge = 250 * time.Millisecond

// closer closes the queued descriptors once they are closeAge old, in
// batches; at the end, at once.
func (s *server) closer() {
	defer close(s.closed)
	var young, old []int
	tick := time.NewTicker(closeAge)
	defer tick.Stop()
	for {
		select {
		case fd, ok := <-s.toClose:
			if !ok {
				closeFds(append(old, young...))
				return
			}
			young = append(young, fd)
		case <-tick.C:
			closeFds(old)
			old, young = young, nil
		}
	}
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// rights returns the descriptors of a control message.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// peerOurs reports whether c's peer runs as this process's user.
func peerOurs(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ours := false
	_ = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		ours = err == nil && int(cred.Uid) == os.Geteuid()
	})
	return ours
}
