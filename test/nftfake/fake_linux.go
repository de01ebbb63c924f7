package nftfake

import (
	"sync"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
)

// Fake is an in-memory nftables ruleset that answers a Conn as the kernel
// does (see the package comment). Its zero value is not usable: make one
// with New. It is safe for concurrent use.
type Fake struct {
	mu       sync.Mutex
	rs       *ruleset
	failNext unix.Errno
	failRead unix.Errno
	after    []afterCall
	commits  int
}

type afterCall struct {
	calls int
	fn    func()
}

// New returns a Fake holding no table.
func New() *Fake { return &Fake{rs: &ruleset{}} }

// Conn returns a Conn over the fake: what a test hands to the code under
// test where it would hand a netfilter.Dial()'s.
func (f *Fake) Conn() *netfilter.Conn { return netfilter.DialPeer(f) }

// NewConn is a fresh Fake and a Conn over it for test t, the Conn closed
// when t ends: what most tests of the firewall start with.
func NewConn(t testing.TB) (*Fake, *netfilter.Conn) {
	fake := New()
	conn := fake.Conn()
	t.Cleanup(conn.Close)
	return fake, conn
}

// FailNext makes the next transaction fail as the kernel fails a commit
// (after every message was accepted): nothing of it applies, and the
// Conn's Apply returns errno.
func (f *Fake) FailNext(errno unix.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = errno
}

// FailReads makes every get and dump answer errno (as the kernel answers
// a caller without CAP_NET_ADMIN: EPERM), until FailReads(0).
func (f *Fake) FailReads(errno unix.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRead = errno
}

// After runs fn once the next calls datagrams (requests or transactions)
// have been answered: a concurrent writer acting between two calls of the
// code under test, such as After(1, func() { f.DeleteTable(t) }) to make
// a table vanish between a read and the write that relies on it.
func (f *Fake) After(calls int, fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = append(f.after, afterCall{calls: calls, fn: fn})
}

// DeleteTable deletes a table with everything in it, as `nft delete
// table` would from another process; false when it does not exist.
func (f *Fake) DeleteTable(t netfilter.Table) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	tab := f.rs.table(t.Proto(), t.Name)
	if tab == nil {
		return false
	}
	f.rs.dropTable(tab)
	return true
}

// Commits returns the number of transactions committed so far.
func (f *Fake) Commits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// Exchange implements netfilter.Peer: it answers one datagram of a Conn
// with the datagrams the kernel would queue on its socket.
func (f *Fake) Exchange(datagram []byte) ([][]byte, error) {
	msgs, err := splitMessages(datagram)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	var out [][]byte
	if len(msgs) > 0 && msgs[0].Header.Type == netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN) {
		out = f.transaction(msgs)
	} else {
		for _, m := range msgs {
			out = append(out, f.request(m)...)
		}
	}
	due := f.due()
	f.mu.Unlock()
	for _, fn := range due {
		fn()
	}
	return out, nil
}

// due counts a datagram against the pending After calls and returns those
// now due.
func (f *Fake) due() []func() {
	var due []func()
	kept := f.after[:0]
	for _, a := range f.after {
		if a.calls--; a.calls <= 0 {
			due = append(due, a.fn)
			continue
		}
		kept = append(kept, a)
	}
	f.after = kept
	return due
}

// transaction applies the messages between BATCH_BEGIN and BATCH_END to a
// copy of the ruleset, in order, as the kernel prepares them; the copy
// becomes the ruleset only if every message was accepted. Answers: the
// rules echoed, then an error for each message refused (or for the
// BATCH_BEGIN of a commit that failed) and an ack for each message that
// asked one, in order, as nfnetlink delivers them.
func (f *Fake) transaction(msgs []netlink.Message) [][]byte {
	begin := msgs[0]
	if len(msgs) < 2 || msgs[len(msgs)-1].Header.Type != netlink.HeaderType(unix.NFNL_MSG_BATCH_END) {
		return [][]byte{ack(begin, unix.EINVAL)}
	}
	tx := &txn{rs: f.rs.clone(), ids: map[uint32]*set{}}
	var answers [][]byte
	failed := false
	for _, m := range msgs[1 : len(msgs)-1] {
		err := tx.apply(m)
		failed = failed || err != nil
		if err != nil || m.Header.Flags&netlink.Acknowledge != 0 {
			answers = append(answers, ack(m, err))
		}
	}
	if !failed && f.failNext != 0 {
		answers = append([][]byte{ack(begin, f.failNext)}, answers...)
		failed = true
	}
	f.failNext = 0
	if failed {
		f.keepHandles(tx.rs)
		return answers
	}
	f.rs = tx.rs
	f.commits++
	return append(tx.echoes, answers...)
}

// keepHandles carries the handles a refused transaction gave out into
// the ruleset: the kernel does not take them back.
func (f *Fake) keepHandles(tried *ruleset) {
	for _, t := range f.rs.tables {
		if o := tried.table(t.family, t.name); o != nil {
			t.hgen = max(t.hgen, o.hgen)
		}
	}
}
