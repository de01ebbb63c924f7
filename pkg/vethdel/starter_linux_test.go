package vethdel

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/test/sandbox"
)

// TestDelHelper: the one helper of a DEL deletes the veth it is told to,
// and keeps the descriptors it was handed open until its starter lets go —
// then exits, closing them.
func TestDelHelper(t *testing.T) {
	c := sandbox.NewNS(t)
	sandbox.RemoveLinkAtEnd(t, "dhA")
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "dhA"}, PeerName: "dhB"}); err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName("dhB")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetNsFd(peer, int(c.Fd())); err != nil {
		t.Fatal(err)
	}
	var index int
	if err := c.Do(func() error { l, err := netlink.LinkByName("dhB"); index = l.Attrs().Index; return err }); err != nil {
		t.Fatal(err)
	}
	h := Start(c.Path())
	if h == nil {
		t.Fatal("the DEL helper did not start")
	}
	defer h.Release()
	// The helper holds the write end of a pipe: its read end sees EOF only
	// once the helper has exited.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !h.hold(int(w.Fd())) {
		t.Fatal("the helper did not take the descriptor")
	}
	w.Close()
	if !h.deleteLink(index) || h.deleteLink(index) {
		t.Fatal("deleteLink: want true once, then false")
	}
	select {
	case err := <-h.result:
		if err != nil {
			t.Fatalf("the helper's answer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer from the helper in 10 s")
	}
	if _, err := netlink.LinkByName("dhA"); !link.IsNotFound(err) {
		t.Errorf("the host end is still there after the deletion: %v", err)
	}
	if err := readBy(r, time.Now().Add(300*time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the held descriptor was closed before the starter let go: %v", err)
	}
	h.Release()
	if err := readBy(r, time.Now().Add(10*time.Second)); !errors.Is(err, io.EOF) {
		t.Errorf("after release, the held descriptor was not closed within 10 s: %v", err)
	}
}

func readBy(r *os.File, deadline time.Time) error {
	if err := r.SetReadDeadline(deadline); err != nil {
		return err
	}
	_, err := r.Read(make([]byte, 1))
	return err
}
