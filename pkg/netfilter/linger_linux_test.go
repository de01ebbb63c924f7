package netfilter

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/sitter"
)

func TestMain(m *testing.M) {
	helper.Dispatch(helper.Set{sitter.HelperName: sitter.Serve})
	os.Exit(m.Run())
}

// TestCloseDetached: a socket handed to the sitter is closed here at once.
func TestCloseDetached(t *testing.T) {
	conn, err := Dial()
	if err != nil {
		t.Skipf("no netfilter netlink socket here: %v", err)
	}
	fd := conn.fd
	if !closeDetached(fd) {
		conn.Close()
		t.Fatal("closeDetached: no sitter took the socket")
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("fd %d after closeDetached: %v, want EBADF", fd, err)
	}
}
