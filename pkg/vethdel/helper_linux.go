// Package vethdel deletes a veth pair without waiting for the kernel.
//
// Deleting a link returns only after the kernel has waited in rcu_barrier()
// for an RCU grace period (10-25 ms on this machine kind). Long before that,
// under the RTNL lock, the kernel has unlisted both ends of the pair, removed
// the host end from the bridge, flushed their addresses, routes and
// neighbours, and announced each end with an RTM_DELLINK notification: what
// is left is freeing memory. So DEL hands the request to a helper process
// (the plugin's own binary, run as helper HelperName through pkg/helper) and
// returns as soon as both ends have been announced gone; the helper sits
// out the kernel's wait and exits. When anything about this goes wrong, DEL
// waits for the helper, then deletes synchronously (a no-op when the helper
// succeeded).
//
// The same helper sits out the other wait of a DEL: closing the netfilter
// socket that deleted the attachment's rules (pkg/netfilter, linger). DEL
// starts it first thing, before it has even looked the veth up, so that its
// start-up overlaps DEL's own work; DEL then sends it the link's index on
// its stdin and the sockets over a Unix socket, and one process, not two,
// outlives the call. The helper exits once the deletion is done and DEL has
// let go of its end of the Unix socket (at its exit at the latest).

package vethdel

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/link"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/ns"
)

// HelperName is the helper of a DEL: its arguments are the container
// netns and the number of the descriptor on which sockets to hold arrive
// ("-": none); its stdin carries the index of the link to delete ("0":
// none); it answers "ok" or the error on stdout. The name is the one
// bridge has always used, so a DEL started by an older binary's helper
// still finds it.
const HelperName = "bridge-veth-delete"

// deleteAnnounceTimeout bounds the wait for the kernel's announcements.
const deleteAnnounceTimeout = 10 * time.Second

// Helpers are the helper processes a binary that uses this package must
// answer (its main dispatches them, before anything else): the DEL helper,
// and the netfilter socket's linger for a DEL that could not start it.
func Helpers() helper.Set {
	return helper.Set{HelperName: deleteVeth, netfilter.LingerHelper: netfilter.Linger}
}

// deleteVeth is the helper's body (see vethDeleteHelper).
func deleteVeth(args []string, stdin io.Reader) error {
	if len(args) != 2 {
		return fmt.Errorf("want a netns path and a descriptor, got %q", args)
	}
	held, err := holdSockets(args[1])
	if err != nil {
		return err
	}
	err = deleteRequested(args[0], stdin)
	status := "ok"
	if err != nil {
		status = err.Error()
	}
	fmt.Fprintln(os.Stdout, status)
	<-held
	return err
}

// deleteRequested deletes the link whose index stdin names, if any. It
// opens the netns while the starter is still looking the link up.
func deleteRequested(path string, stdin io.Reader) error {
	h, openErr := handleIn(path)
	if h != nil {
		defer h.Close()
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	index := strings.TrimSpace(line)
	if index == "0" || (err != nil && index == "") {
		return nil // nothing to delete (or the starter is gone)
	}
	if openErr == nil {
		openErr = deleteByIndex(h, index)
	}
	if openErr != nil {
		return fmt.Errorf("deleting link %s in %s: %w", index, path, openErr)
	}
	return nil
}

// holdSockets receives sockets on descriptor fd ("-": none) until its
// other end closes, and keeps them open until this process exits; the
// channel closes at that end.
func holdSockets(fd string) (<-chan struct{}, error) {
	done := make(chan struct{})
	if fd == "-" {
		close(done)
		return done, nil
	}
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil, fmt.Errorf("bad descriptor %q", fd)
	}
	go func() {
		defer close(done)
		buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
		for i := 0; i < maxHeld; i++ {
			m, oobn, _, _, err := unix.Recvmsg(n, buf, oob, unix.MSG_CMSG_CLOEXEC)
			if err != nil || m == 0 && oobn == 0 {
				return // the starter let go
			}
		}
	}()
	return done, nil
}

// maxHeld bounds the sockets a helper takes: a DEL closes one or two.
const maxHeld = 64

// handleIn opens a netlink handle in the netns at path.
func handleIn(path string) (*netlink.Handle, error) {
	n, err := ns.Open(path)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	return netlink.NewHandleAt(netns.NsHandle(n.Fd()), unix.NETLINK_ROUTE)
}

func deleteByIndex(h *netlink.Handle, index string) error {
	idx, err := strconv.Atoi(index)
	if err != nil || idx <= 0 {
		return fmt.Errorf("bad index %q", index)
	}
	err = h.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}})
	if err != nil && !link.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteDetached deletes the veth pair whose container end is c (in the
// namespace contNS, reached with cont) through the helper, and returns
// once both ends are gone (see above). c's peer must be a veth of the host
// namespace that pairs with c, as DeleteContainerEnd proves before. step
// names the phases for a trace (nil: none). It returns false, having done
// nothing, when there is no helper (h is nil).
func (h *Helper) deleteDetached(cont *netlink.Handle, contNS *ns.NetNS, c *netlink.Veth, step func(string) func()) (bool, error) {
	peer := c.ParentIndex
	if h == nil || peer <= 0 {
		return false, nil
	}
	if step == nil {
		step = func(string) func() { return func() {} }
	}
	nsh := netns.NsHandle(contNS.Fd())
	var subs []<-chan netlink.LinkUpdate // container's, then host's
	for _, n := range []*netns.NsHandle{&nsh, nil} {
		ch, stop, err := subscribeLinks(n)
		if err != nil {
			return false, nil
		}
		defer stop()
		subs = append(subs, ch)
	}
	if !h.deleteLink(c.Index) {
		return false, nil
	}
	done := step("vethAnnouncedGone")
	if awaitDeleted(subs, c.Index, peer, h.result) {
		done()
		return true, nil
	}
	done = step("vethFallback")
	defer done()
	h.wait() // the helper's own outcome no longer matters: delete (again)
	return true, link.DeleteLink(cont, c.Name)
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
