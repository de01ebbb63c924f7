package netfilter

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
)

func TestMain(m *testing.M) {
	helper.Dispatch(helper.Set{LingerHelper: Linger})
	os.Exit(m.Run())
}

// TestLingerHelperWaitsForEOF: the helper holds on until its starter
// closes the pipe, then exits 0.
func TestLingerHelperWaitsForEOF(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := helper.Command(LingerHelper)
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the helper exited before EOF: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	w.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the helper after EOF: %v, want exit 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the helper did not exit within 5 s of EOF")
	}
}

// TestCloseDetached: a socket handed to the helper is closed here at once.
func TestCloseDetached(t *testing.T) {
	conn, err := Dial()
	if err != nil {
		t.Skipf("no netfilter netlink socket here: %v", err)
	}
	fd := conn.fd
	if !closeDetached(fd) {
		conn.Close()
		t.Fatal("closeDetached could not start the helper")
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("fd %d after closeDetached: %v, want EBADF", fd, err)
	}
}
