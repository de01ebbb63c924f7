package vethdel

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
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
// plugin's main does: the helper started by a test runs this binary.
func TestMain(m *testing.M) {
	helper.Dispatch(Helpers())
	os.Exit(m.Run())
}

func TestVethHelperRequests(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   []string
		stdin string
		want  int
	}{
		{"not_a_request", []string{"bridge"}, nil, "", -1},
		{"old_environment_is_no_request", []string{"bridge"}, []string{"CNISUITE_BRIDGE_DELETE_NETNS=/x", "CNISUITE_BRIDGE_DELETE_INDEX=2"}, "", -1},
		{"no_arguments", []string{"bridge", helper.Flag, HelperName}, nil, "", 1},
		{"no_descriptor", []string{"bridge", helper.Flag, HelperName, "/nonexistent"}, nil, "0\n", 1},
		{"bad_descriptor", []string{"bridge", helper.Flag, HelperName, "/nonexistent", "x"}, nil, "0\n", 1},
		{"bad_index", []string{"bridge", helper.Flag, HelperName, "/nonexistent", "-"}, nil, "x\n", 1},
		{"missing_netns", []string{"bridge", helper.Flag, HelperName, "/nonexistent", "-"}, nil, "2\n", 1},
		{"nothing_to_delete", []string{"bridge", helper.Flag, HelperName, "/nonexistent", "-"}, nil, "0\n", 0},
		{"starter_gone", []string{"bridge", helper.Flag, HelperName, "/nonexistent", "-"}, nil, "", 0},
		{"unknown_helper", []string{"bridge", helper.Flag, "bogus"}, nil, "", 2},
		{"with_cni_environment", []string{"bridge", helper.Flag, HelperName, "/x", "-"}, []string{"CNI_COMMAND=DEL"}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code, handled := helper.Run(tt.args, tt.env, strings.NewReader(tt.stdin), &stderr, Helpers())
			if !handled {
				code = -1
			}
			if code != tt.want {
				t.Fatalf("helper.Run(%q) = %d, want %d (stderr %q)", tt.args, code, tt.want, stderr.String())
			}
			if code > 0 && stderr.Len() == 0 {
				t.Errorf("helper.Run(%q) failed without a message on stderr", tt.args)
			}
		})
	}
}
