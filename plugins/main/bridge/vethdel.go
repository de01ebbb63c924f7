package main

// Detached veth deletion.
//
// Deleting a link returns only after the kernel has waited in rcu_barrier()
// for an RCU grace period (10-25 ms on this machine kind). Long before that,
// under the RTNL lock, the kernel has unlisted both ends of the pair, removed
// the host end from the bridge, flushed their addresses, routes and
// neighbours, and announced each end with an RTM_DELLINK notification: what
// is left is freeing memory. So DEL hands the request to a helper process
// (this binary, run as helper vethDeleteHelper through pkg/helper) and
// returns as soon as both ends have been announced gone; the helper sits
// out the kernel's wait and exits. When anything about this goes wrong, DEL
// waits for the helper, then deletes synchronously (a no-op when the helper
// succeeded).

import (
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/link"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/ns"
)

// vethDeleteHelper is the helper that deletes a link: its arguments are
// the container netns and the index of the link there.
const vethDeleteHelper = "bridge-veth-delete"

// deleteAnnounceTimeout bounds the wait for the kernel's announcements.
const deleteAnnounceTimeout = 10 * time.Second

// helpers are the helper processes the bridge binary answers (main and
// TestMain dispatch them): the veth deletion and the netfilter socket's
// linger after DEL removed rules.
func helpers() helper.Set {
	return helper.Set{vethDeleteHelper: deleteVeth, netfilter.LingerHelper: netfilter.Linger}
}

// deleteVeth is the helper's body: args are the netns path and the index.
func deleteVeth(args []string, _ io.Reader) error {
	if len(args) != 2 {
		return fmt.Errorf("want a netns path and a link index, got %q", args)
	}
	if err := deleteByIndex(args[0], args[1]); err != nil {
		return fmt.Errorf("deleting link %s in %s: %w", args[1], args[0], err)
	}
	return nil
}

func deleteByIndex(path, index string) error {
	idx, err := strconv.Atoi(index)
	if err != nil || idx <= 0 {
		return fmt.Errorf("bad index %q", index)
	}
	n, err := ns.Open(path)
	if err != nil {
		return err
	}
	defer n.Close()
	h, err := netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	err = h.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}})
	if err != nil && !link.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteVethDetached deletes the veth pair whose container end is c and
// returns once both ends are gone (see above). It returns false, having
// done nothing, when c's peer is not a veth of the host namespace.
func (at *attach) deleteVethDetached(c *netlink.Veth) (bool, error) {
	peer := c.ParentIndex
	if peer <= 0 {
		return false, nil
	}
	if h, err := at.host.LinkByIndex(peer); err != nil || h.Type() != "veth" {
		return false, nil
	}
	contNS := netns.NsHandle(at.netns.Fd())
	var subs []<-chan netlink.LinkUpdate // container's, then host's
	for _, nsh := range []*netns.NsHandle{&contNS, nil} {
		ch, stop, err := subscribeLinks(nsh)
		if err != nil {
			return false, nil
		}
		defer stop()
		subs = append(subs, ch)
	}
	cmd := helper.Command(vethDeleteHelper, at.args.Netns, strconv.Itoa(c.Index))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, nil
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := at.tm.step("vethAnnouncedGone")
	if awaitDeleted(subs, c.Index, peer, exited) {
		done()
		return true, nil
	}
	done = at.tm.step("vethFallback")
	defer done()
	<-exited // the helper's own outcome no longer matters: delete (again)
	return true, link.DeleteLink(at.cont, c.Name)
}

// awaitDeleted waits for the RTM_DELLINK of the container end (on subs[0])
// and of the host end (on subs[1]), bounded. false: the helper failed, a
// subscription broke or the time ran out.
func awaitDeleted(subs []<-chan netlink.LinkUpdate, contIdx, hostIdx int, exited <-chan error) bool {
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
		case err := <-exited:
			return err == nil // the helper finished the deletion, kernel wait included
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
