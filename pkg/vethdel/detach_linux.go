// Package vethdel deletes a veth pair without waiting for the kernel.
//
// Deleting a link returns only after the kernel has waited in rcu_barrier()
// for an RCU grace period (10-25 ms on this machine kind). Long before that,
// under the RTNL lock, the kernel has unlisted both ends of the pair, removed
// the host end from the bridge, flushed their addresses, routes and
// neighbours, and announced each end with an RTM_DELLINK notification: what
// is left is freeing memory. So DEL asks the node's sitter (pkg/sitter) to
// delete the link and returns as soon as both ends have been announced
// gone; the sitter sits out the kernel's wait. When anything about this
// goes wrong, DEL waits for the sitter's answer, then deletes synchronously
// (a no-op when the sitter succeeded).
package vethdel

import (
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/sitter"
)

// deleteAnnounceTimeout bounds the wait for the kernel's announcements,
// and then for the sitter's answer.
const deleteAnnounceTimeout = 10 * time.Second

// deleteDetached deletes the veth pair whose container end is c (in the
// namespace contNS, reached with cont) through the sitter s, and returns
// once both ends are gone (see above). c's peer must be a veth of the host
// namespace that pairs with c, as DeleteContainerEnd proves before. step
// names the phases for a trace (nil: none). It returns false, having done
// nothing, when s is nil or no sitter takes the request.
func deleteDetached(s *sitter.Client, cont *netlink.Handle, contNS *ns.NetNS, c *netlink.Veth, step func(string) func()) (bool, error) {
	peer := c.ParentIndex
	if s == nil || peer <= 0 {
		return false, nil
	}
	if step == nil {
		step = func(string) func() { return func() {} }
	}
	nsh := netns.NsHandle(contNS.Fd())
	var subs []<-chan netlink.LinkUpdate // container's, then host's
	done := step("vethSubscribe")
	for _, n := range []*netns.NsHandle{&nsh, nil} {
		ch, stop, err := subscribeLinks(n)
		if err != nil {
			return false, nil
		}
		defer stop()
		subs = append(subs, ch)
	}
	done()
	done = step("vethRequest")
	outcome, ok := s.DeleteLink(int(contNS.Fd()), c.Index)
	done()
	if !ok {
		return false, nil
	}
	done = step("vethAnnouncedGone")
	if awaitDeleted(subs, c.Index, peer, outcome) {
		done()
		return true, nil
	}
	done = step("vethFallback")
	defer done()
	select { // the sitter's own outcome no longer matters: delete (again)
	case <-outcome:
	case <-time.After(deleteAnnounceTimeout):
	}
	return true, link.DeleteLink(cont, c.Name)
}

// awaitDeleted waits for the RTM_DELLINK of the container end (on subs[0])
// and of the host end (on subs[1]), bounded. false: the sitter failed, a
// subscription broke or the time ran out.
func awaitDeleted(subs []<-chan netlink.LinkUpdate, contIdx, hostIdx int, outcome <-chan error) bool {
	pending := map[int]int{0: contIdx, 1: hostIdx}
	timer := time.NewTimer(deleteAnnounceTimeout)
	defer timer.Stop()
	for len(pending) > 0 {
		var u netlink.LinkUpdate
		var ok bool
		var from int
		select {
		case u, ok = <-subs[0]:
		case u, ok = <-subs[1]:
			from = 1
		case err := <-outcome:
			return err == nil // the sitter finished the deletion, kernel wait included
		case <-timer.C:
			return false
		}
		if !ok {
			return false
		}
		if u.Header.Type == unix.RTM_DELLINK && int(u.Index) == pending[from] {
			delete(pending, from)
		}
	}
	return true
}

// subscribeLinks subscribes to the link notifications of the namespace nsh
// (nil: the calling thread's) and returns the channel and the function that
// ends the subscription.
func subscribeLinks(nsh *netns.NsHandle) (<-chan netlink.LinkUpdate, func(), error) {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{Namespace: nsh})
	if err != nil {
		return nil, nil, fmt.Errorf("subscribing to link updates: %w", err)
	}
	stop := func() {
		close(done)
		go func() { // let the subscriber goroutine finish its last send and exit
			for range updates {
			}
		}()
	}
	return updates, stop, nil
}
