// Package vethdel deletes an attachment's veth pair, and only when it is
// provably the attachment's: prevResult may be stale or forged and an
// interface name may be held by another network's link, so a name read from
// input is a candidate, never a proof.
//
// A deletion waits for the kernel, in the calling process: deleting a link
// returns after the kernel's RCU barrier (10-25 ms on this machine kind).
// Nothing of ours outlives the call to sit that wait out (docs/operations.md,
// "What a call starts").
package vethdel

import (
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
)

// Pair is where an attachment's veth pair lives and what proves it ours.
type Pair struct {
	Host   *netlink.Handle // the host namespace's
	Cont   *netlink.Handle // the container namespace's; nil without NetNS
	NetNS  *ns.NetNS       // the container namespace; nil when it is gone
	Bridge string          // the bridge the host end is a port of
}

// DeleteContainerEnd deletes the container interface ifname when it is
// provably the attachment's: a veth whose host end, in the host namespace,
// pairs with it and is a port of p.Bridge or is called one of hostNames.
// Anything else is left alone — another network's interface that holds the
// name (the one a failed ADD of this attachment ran into, say) is not ours
// to delete because an input named it. A missing interface or namespace is
// success.
//
// Equivalent to: ip -n $netns link del $ifname (after ip -d link show)
func (p Pair) DeleteContainerEnd(ifname string, hostNames []string) error {
	if p.NetNS == nil || p.Cont == nil {
		return nil
	}
	l, err := p.Cont.LinkByName(ifname)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up %q: %w", ifname, err)
	}
	veth, ok := l.(*netlink.Veth)
	if !ok || !p.hostEndOurs(veth, hostNames) {
		return nil
	}
	return link.DeleteLink(p.Cont, ifname)
}

// hostEndOurs reports whether the container end c's peer is a veth of the
// host namespace that pairs with c (its own peer lives in p.NetNS under c's
// index) and is a port of p.Bridge or called one of names.
func (p Pair) hostEndOurs(c *netlink.Veth, names []string) bool {
	if c.ParentIndex <= 0 {
		return false
	}
	peer, err := p.Host.LinkByIndex(c.ParentIndex)
	if err != nil {
		return false
	}
	if v, ok := peer.(*netlink.Veth); !ok || v.ParentIndex != c.Index || !p.peerIn(peer) {
		return false
	}
	return slices.Contains(names, peer.Attrs().Name) || p.portOfBridge(peer)
}

// portOfBridge reports whether l is a port of the bridge p.Bridge.
func (p Pair) portOfBridge(l netlink.Link) bool {
	if l.Attrs().MasterIndex == 0 {
		return false
	}
	br, err := p.Host.LinkByIndex(l.Attrs().MasterIndex)
	return err == nil && br.Attrs().Name == p.Bridge
}

// DeleteHostPort deletes the host veth called name when it is a port of
// p.Bridge and provably the attachment's: named by the attachment's
// deterministic name (byOurName), or with its peer in p.NetNS. Anything else
// is left alone: another pod's port is not ours to delete because an input
// named it. A missing link is success.
//
// Equivalent to: ip link del $name (after ip -d link show $name)
func (p Pair) DeleteHostPort(name string, byOurName bool) error {
	l, err := p.Host.LinkByName(name)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up host veth %q: %w", name, err)
	}
	if _, ok := l.(*netlink.Veth); !ok || !p.portOfBridge(l) {
		return nil // not a port of our bridge: not ours to delete
	}
	if !byOurName && !p.peerIn(l) {
		return nil
	}
	return link.DeleteLink(p.Host, name)
}

// peerIn reports whether the veth l's peer lives in p.NetNS: the namespace
// ID the host gives l's link-netns is the one it gives p.NetNS. Without a
// netns (it is gone), no peer can be proven there.
func (p Pair) peerIn(l netlink.Link) bool {
	if p.NetNS == nil || l.Attrs().NetNsID < 0 {
		return false
	}
	id, err := p.Host.GetNetNsIdByFd(int(p.NetNS.Fd()))
	return err == nil && id >= 0 && id == l.Attrs().NetNsID
}
