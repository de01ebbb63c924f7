package vethdel

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with a network
// namespace of its own (test/userns), as root or not: that namespace is
// the host's.
func TestMain(m *testing.M) { userns.Main(m) }

// TestDeleteContainerEnd: a pair whose host end is named as the
// attachment's goes, and both ends are gone when the call returns; a pair
// whose host end is not the attachment's stays.
func TestDeleteContainerEnd(t *testing.T) {
	tests := []struct {
		name      string
		hostNames []string
		wantGone  bool
	}{
		{"ours", []string{"vdA"}, true},
		{"not_ours", []string{"other"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := userns.NewNS(t)
			t.Cleanup(func() { _ = link.DeleteLink(nil, "vdA") })
			if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vdA"}, PeerName: "vdB"}); err != nil {
				t.Fatal(err)
			}
			peer, err := netlink.LinkByName("vdB")
			if err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetNsFd(peer, int(c.Fd())); err != nil {
				t.Fatal(err)
			}
			host, err := netlink.NewHandle()
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			cont, err := netlink.NewHandleAt(netns.NsHandle(c.Fd()), unix.NETLINK_ROUTE)
			if err != nil {
				t.Fatal(err)
			}
			defer cont.Close()
			pair := Pair{Host: host, Cont: cont, NetNS: c}
			if err := pair.DeleteContainerEnd("vdB", tt.hostNames); err != nil {
				t.Fatalf("DeleteContainerEnd: %v", err)
			}
			_, hostErr := host.LinkByName("vdA")
			_, contErr := cont.LinkByName("vdB")
			if gone := link.IsNotFound(hostErr) && link.IsNotFound(contErr); gone != tt.wantGone {
				t.Errorf("both ends gone on return: %v (host end: %v, container end: %v), want %v", gone, hostErr, contErr, tt.wantGone)
			}
		})
	}
}
