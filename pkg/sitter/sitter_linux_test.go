package sitter

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/link"
	"cnisuite/test/sandbox"
)

func TestMain(m *testing.M) {
	helper.Dispatch(helper.Set{HelperName: Serve, "test-squatter": squat, "test-stranger": stranger})
	os.Exit(m.Run())
}

// useName gives the test a sitter of its own, with this idle time and a
// close age of 10 ms.
func useName(t *testing.T, idleTime time.Duration) {
	oldName, oldIdle, oldAge := name, idle, closeAge
	name = fmt.Sprintf("cnisuite-sitter-test-%d-%s", os.Getpid(), t.Name())
	idle, closeAge = idleTime, 10*time.Millisecond
	t.Cleanup(func() { name, idle, closeAge = oldName, oldIdle, oldAge })
}

// pipe returns a pipe's read end (closed at the test's end) and its write
// end as a bare descriptor.
func pipe(t *testing.T) (*os.File, int) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil { // for deadlines
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(p[0]), "read end")
	t.Cleanup(func() { r.Close() })
	return r, p[1]
}

// closedWithin reports whether r sees EOF — the last copy of its write end
// closed — before the deadline.
func closedWithin(r *os.File, d time.Duration) error {
	if err := r.SetReadDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	_, err := r.Read(make([]byte, 1))
	if errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("the write end is still open after %v: %v", d, err)
}

func isClosed(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return errors.Is(err, unix.EBADF)
}

// peerPID is the process at the other end of c's connection (0: none).
func peerPID(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return 0
	}
	raw, err := c.conn.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// TestHoldHandsOver: a descriptor handed over is closed here at once and
// by the sitter afterwards — by one it starts when none runs, over the
// connection when one does.
func TestHoldHandsOver(t *testing.T) {
	useName(t, 5*time.Second)
	c := &Client{}
	defer c.Close()
	for i, how := range []string{"a sitter started with it", "the connection"} {
		r, w := pipe(t)
		if !c.Hold(w) {
			t.Fatalf("hand-over %d (%s): Hold = false", i, how)
		}
		if !isClosed(w) {
			t.Errorf("hand-over %d (%s): the caller's copy is still open", i, how)
		}
		if err := closedWithin(r, 5*time.Second); err != nil {
			t.Errorf("hand-over %d (%s): %v", i, how, err)
		}
	}
	if peerPID(c) == 0 {
		t.Error("the second hand-over went over no connection")
	}
}

// TestHeldUntilReleased: the sitter keeps what it was handed — over a
// connection or at its start — open until the caller says it closed its
// own copy, so that the caller's close is never the last (the one that
// waits for the kernel).
func TestHeldUntilReleased(t *testing.T) {
	useName(t, 5*time.Second)
	for _, how := range []string{"at its start", "over a connection"} {
		r, w := pipe(t)
		var release func()
		if how == "at its start" {
			var err error
			if release, err = start([]int{w}, false); err != nil {
				t.Fatal(err)
			}
		} else {
			c := &Client{}
			defer c.Close()
			c.mu.Lock()
			err := c.send(true, []byte{opHold}, w)
			c.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			release = func() { _, _ = c.conn.Write([]byte{opRelease}) }
		}
		unix.Close(w)
		if err := closedWithin(r, 300*time.Millisecond); err == nil {
			t.Errorf("%s: the sitter closed its copy before the caller released it", how)
		}
		release()
		if err := closedWithin(r, 5*time.Second); err != nil {
			t.Errorf("%s, released: %v", how, err)
		}
	}
}

// TestClosesWhenOld: a released descriptor stays open for the close age
// (so that its close finds the kernel's work done, see closeAge), then
// goes.
func TestClosesWhenOld(t *testing.T) {
	useName(t, 5*time.Second)
	closeAge = 400 * time.Millisecond
	c := &Client{}
	defer c.Close()
	r, w := pipe(t)
	if !c.Hold(w) {
		t.Fatal("Hold = false")
	}
	if err := closedWithin(r, 200*time.Millisecond); err == nil {
		t.Error("closed before its close age")
	}
	if err := closedWithin(r, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestOneSitterForMany: callers that all find none running end up with
// one sitter, whoever started it; it is called by its name.
func TestOneSitterForMany(t *testing.T) {
	useName(t, 5*time.Second)
	clients := make([]*Client, 8)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &Client{}
		defer clients[i].Close()
		wg.Add(1)
		go func(c *Client) {
			defer wg.Done()
			c.mu.Lock()
			defer c.mu.Unlock()
			if _, err := c.connect(true); err != nil {
				t.Errorf("connect: %v", err)
			}
		}(clients[i])
	}
	wg.Wait()
	pids := map[int]bool{}
	for _, c := range clients {
		pids[peerPID(c)] = true
	}
	if len(pids) != 1 || pids[0] {
		t.Fatalf("the callers' sitters: %v, want one process", pids)
	}
	for pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if got := strings.TrimSpace(string(comm)); got != HelperName[:15] {
			t.Errorf("the sitter's command name: %q, want %q", got, HelperName[:15])
		}
	}
}

// TestExitsWhenIdle: the sitter exits once nothing came for its idle time,
// though a caller is still connected; that caller's next hand-over starts
// a new one.
func TestExitsWhenIdle(t *testing.T) {
	useName(t, 200*time.Millisecond)
	c := &Client{}
	defer c.Close()
	c.mu.Lock()
	_, err := c.connect(true)
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	pid := peerPID(c)
	if !gone(pid, 5*time.Second) {
		t.Fatalf("the sitter %d still runs 5 s after its last caller (idle time 200 ms)", pid)
	}
	r, w := pipe(t)
	if !c.Hold(w) {
		t.Fatal("Hold after the sitter exited = false")
	}
	if err := closedWithin(r, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// gone waits, bounded, for process pid to have exited and been reaped.
func gone(pid int, within time.Duration) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
	}
	return false
}

// TestDeleteLink: the sitter deletes the link it is asked to, in the
// namespace that came with the request, and answers; a bad request gets
// an error, not a deletion.
func TestDeleteLink(t *testing.T) {
	useName(t, 5*time.Second)
	n := sandbox.NewNS(t)
	var index int
	err := n.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "sitA"}, PeerName: "sitB"}); err != nil {
			return err
		}
		l, err := netlink.LinkByName("sitA")
		if err == nil {
			index = l.Attrs().Index
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{}
	defer c.Close()
	for _, tt := range []struct {
		index int
		want  string // "": success
	}{{-1, "bad index"}, {index, ""}, {index, ""}} { // a second time: already gone
		outcome, ok := c.DeleteLink(int(n.Fd()), tt.index)
		if !ok {
			t.Fatal("DeleteLink: no sitter took the request")
		}
		select {
		case err := <-outcome:
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("deleting index %d: %v, want %q", tt.index, err, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("deleting index %d: no answer in 10 s", tt.index)
		}
	}
	err = n.Do(func() error { _, err := netlink.LinkByName("sitB"); return err })
	if !link.IsNotFound(err) {
		t.Errorf("the veth's other end after the deletion: %v, want not found", err)
	}
}

// nobody is the user of the strangers below.
var nobody = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}

// TestOtherUsers: a name held by another user's process gets nothing from
// us (a hand-over goes to a sitter of ours that finds the name taken and
// closes it; a deletion is refused, for the caller to do itself), and a
// sitter of ours serves no other user.
func TestOtherUsers(t *testing.T) {
	sandbox.Require(t)
	useName(t, 5*time.Second)
	squatter := helper.Command("test-squatter", name)
	squatter.SysProcAttr = nobody
	out, err := squatter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stop, err := squatter.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := squatter.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	if n, _ := out.Read(line); strings.TrimSpace(string(line[:n])) != "listening" {
		t.Fatalf("the squatter did not listen: %q", line[:n])
	}
	c := &Client{}
	defer c.Close()
	r, w := pipe(t)
	if !c.Hold(w) {
		t.Error("Hold with the name squatted = false, want a sitter of ours to close it")
	}
	if err := closedWithin(r, 5*time.Second); err != nil {
		t.Error(err)
	}
	if _, ok := c.DeleteLink(0, 1); ok {
		t.Error("DeleteLink with the name squatted: a request was sent")
	}
	stop.Close()
	got, _ := io.ReadAll(out)
	if err := squatter.Wait(); err != nil || strings.TrimSpace(string(got)) != "0 messages" {
		t.Errorf("the squatter: %v, %q, want 0 messages", err, got)
	}

	// A sitter of ours, then a stranger asking it for a deletion.
	c2 := &Client{}
	defer c2.Close()
	r2, w2 := pipe(t)
	if !c2.Hold(w2) || closedWithin(r2, 5*time.Second) != nil {
		t.Fatal("no sitter of ours took a hand-over")
	}
	stranger := helper.Command("test-stranger", name)
	stranger.SysProcAttr = nobody
	var stderr strings.Builder
	stranger.Stderr = &stderr
	answer, err := stranger.Output()
	if err != nil || strings.TrimSpace(string(answer)) != "no answer" {
		t.Errorf("a stranger's request: %v (%s), %q, want no answer", err, stderr.String(), answer)
	}
}

// squat holds the name as another user would, and counts what comes.
func squat(args []string, stdin io.Reader) error {
	l, err := net.ListenUnix("unixpacket", address(args[0]))
	if err != nil {
		return err
	}
	fmt.Println("listening")
	go func() { _, _ = io.Copy(io.Discard, stdin); l.Close() }()
	messages := 0
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			break
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		buf, oob := make([]byte, 64), make([]byte, 64)
		if n, _, _, _, err := c.ReadMsgUnix(buf, oob); err == nil && n > 0 {
			messages++
		}
		c.Close()
	}
	fmt.Printf("%d messages\n", messages)
	return nil
}

// stranger asks the sitter, as another user, to delete its loopback.
func stranger(args []string, _ io.Reader) error {
	conn, err := net.DialUnix("unixpacket", nil, address(args[0]))
	if err != nil {
		return err
	}
	defer conn.Close()
	self, err := os.Open("/proc/self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	// The sitter may hang up before the request is even written (EPIPE).
	_, _, err = conn.WriteMsgUnix([]byte{opDelete, '1'}, unix.UnixRights(int(self.Fd())), nil)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	if n, rerr := conn.Read(buf); err == nil && rerr == nil && n > 0 {
		fmt.Println(string(buf[:n]))
		return nil
	}
	fmt.Println("no answer")
	return nil
}

// TestServeRefusesBadArguments: a request whose arguments are not what
// start sends is refused before anything listens.
func TestServeRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		nil, {"n"}, {"n", "100", "250"}, {"n", "x", "250", "0"}, {"n", "0", "250", "0"},
		{"n", "100", "-1", "0"}, {"n", "100", "250", "-1"}, {"n", "100", "250", "9"},
	} {
		if err := Serve(args, strings.NewReader("")); err == nil {
			t.Errorf("Serve(%q) = nil, want an error", args)
		}
	}
}
