package vethdel

import (
	"errors"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/sitter"
)

func TestAwaitDeleted(t *testing.T) {
	const cont, host = 7, 42
	upd := func(typ uint16, idx int32) netlink.LinkUpdate {
		return netlink.LinkUpdate{IfInfomsg: nl.IfInfomsg{IfInfomsg: unix.IfInfomsg{Index: idx}}, Header: unix.NlMsghdr{Type: typ}}
	}
	tests := []struct {
		name       string
		cont, host []netlink.LinkUpdate
		closeCont  bool
		helper     error // nil: still running
		helperDone bool
		want       bool
	}{
		{"both_ends_announced", []netlink.LinkUpdate{upd(unix.RTM_NEWLINK, cont), upd(unix.RTM_DELLINK, cont)},
			[]netlink.LinkUpdate{upd(unix.RTM_DELLINK, 3), upd(unix.RTM_DELLINK, host)}, false, nil, false, true},
		{"helper_finished_first", nil, nil, false, nil, true, true},
		{"helper_failed", []netlink.LinkUpdate{upd(unix.RTM_DELLINK, cont)}, nil, false, errors.New("exit status 1"), true, false},
		{"subscription_broke", nil, nil, true, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, h := make(chan netlink.LinkUpdate, 8), make(chan netlink.LinkUpdate, 8)
			for _, u := range tt.cont {
				c <- u
			}
			for _, u := range tt.host {
				h <- u
			}
			if tt.closeCont {
				close(c)
			}
			exited := make(chan error, 1)
			if tt.helperDone {
				exited <- tt.helper
			}
			if got := awaitDeleted([]<-chan netlink.LinkUpdate{c, h}, cont, host, exited); got != tt.want {
				t.Errorf("awaitDeleted() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMain answers the helper requests of the code under test, as a
// plugin's main does: a sitter started by a test runs this binary.
func TestMain(m *testing.M) {
	helper.Dispatch(helper.Set{sitter.HelperName: sitter.Serve})
	os.Exit(m.Run())
}
