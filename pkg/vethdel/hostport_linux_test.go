package vethdel

import (
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
	"cnisuite/pkg/sitter"
	"cnisuite/test/sandbox"
)

// TestDeleteContainerEnd: a pair whose host end is named as the
// attachment's goes — through the sitter when there is a client, by the
// call itself without one — and both ends are gone when the call returns;
// a pair whose host end is not the attachment's stays.
func TestDeleteContainerEnd(t *testing.T) {
	tests := []struct {
		name      string
		client    *sitter.Client
		hostNames []string
		wantGone  bool
		wantSteps []string
	}{
		{"through_the_sitter", &sitter.Client{}, []string{"vdA"}, true, []string{"vethSubscribe", "vethRequest", "vethAnnouncedGone"}},
		{"without_a_sitter", nil, []string{"vdA"}, true, nil},
		{"not_ours", &sitter.Client{}, []string{"other"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sandbox.NewNS(t)
			sandbox.RemoveLinkAtEnd(t, "vdA")
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
			if tt.client != nil {
				defer tt.client.Close()
			}
			var steps []string
			step := func(s string) func() { steps = append(steps, s); return func() {} }
			if err := DeleteContainerEnd(tt.client, host, cont, c, "vdB", "", tt.hostNames, step); err != nil {
				t.Fatalf("DeleteContainerEnd: %v", err)
			}
			_, hostErr := host.LinkByName("vdA")
			_, contErr := cont.LinkByName("vdB")
			if gone := link.IsNotFound(hostErr) && link.IsNotFound(contErr); gone != tt.wantGone {
				t.Errorf("both ends gone on return: %v (host end: %v, container end: %v), want %v", gone, hostErr, contErr, tt.wantGone)
			}
			if !slices.Equal(steps, tt.wantSteps) {
				t.Errorf("steps %q, want %q", steps, tt.wantSteps)
			}
		})
	}
}
