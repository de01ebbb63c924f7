package netfilter

import "golang.org/x/sys/unix"

// socket is what a Conn needs of its netlink socket: the kernel's
// (fdSocket), or a test's in-memory ruleset behind a Peer (peerSocket).
type socket interface {
	sendto(datagram []byte) error
	recvfrom(buf []byte, flags int) (int, error)
	getsockopt(opt int) (int, error)
	setsockopt(opt, value int) error
	close()
}

// fdSocket is the kernel's netfilter netlink socket.
type fdSocket int

// closed is the socket of a closed Conn.
const closed = fdSocket(-1)

func (s fdSocket) sendto(b []byte) error {
	return unix.Sendto(int(s), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func (s fdSocket) recvfrom(buf []byte, flags int) (int, error) {
	n, _, err := unix.Recvfrom(int(s), buf, flags)
	return n, err
}

func (s fdSocket) getsockopt(opt int) (int, error) {
	return unix.GetsockoptInt(int(s), unix.SOL_SOCKET, opt)
}

func (s fdSocket) setsockopt(opt, value int) error {
	return unix.SetsockoptInt(int(s), unix.SOL_SOCKET, opt, value)
}

func (s fdSocket) close() { unix.Close(int(s)) }

// Peer is what a Conn made by DialPeer talks to instead of the kernel: a
// test's in-memory ruleset (package nftfake). Exchange takes one datagram
// as the Conn sends it and returns the datagrams the kernel would queue on
// the socket in answer, in order; an error is what sendto would return.
type Peer interface {
	Exchange(datagram []byte) ([][]byte, error)
}

// DialPeer returns a Conn over p instead of a kernel socket, for tests:
// everything else of the Conn (its encoders, its decoders, its waits for
// answers) is the one the kernel socket uses.
func DialPeer(p Peer) *Conn {
	return &Conn{sock: &peerSocket{peer: p, bufs: map[int]int{}}, buf: make([]byte, 64<<10)}
}

// peerSocket queues a Peer's answers as the kernel queues them on a
// socket; its buffer sizes start at a node's defaults and grow as the
// kernel's do (to twice what is asked).
type peerSocket struct {
	peer  Peer
	queue [][]byte
	bufs  map[int]int // SO_SNDBUF, SO_RCVBUF once set
}

// defaultBuf is net.core.wmem_default and rmem_default on most nodes.
const defaultBuf = 212992

func (s *peerSocket) sendto(b []byte) error {
	answers, err := s.peer.Exchange(b)
	s.queue = append(s.queue, answers...)
	return err
}

// recvfrom returns the next datagram, truncated to buf as the kernel
// truncates it; none queued is EAGAIN, what the kernel socket answers once
// its receive timeout (nlTimeout) passes.
func (s *peerSocket) recvfrom(buf []byte, _ int) (int, error) {
	if len(s.queue) == 0 {
		return 0, unix.EAGAIN
	}
	n := copy(buf, s.queue[0])
	s.queue = s.queue[1:]
	return n, nil
}

func (s *peerSocket) getsockopt(opt int) (int, error) {
	if v, ok := s.bufs[opt]; ok {
		return v, nil
	}
	return defaultBuf, nil
}

func (s *peerSocket) setsockopt(opt, value int) error {
	switch opt {
	case unix.SO_SNDBUFFORCE:
		opt = unix.SO_SNDBUF
	case unix.SO_RCVBUFFORCE:
		opt = unix.SO_RCVBUF
	}
	s.bufs[opt] = 2 * value
	return nil
}

func (s *peerSocket) close() {}
