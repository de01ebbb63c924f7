package vethdel

import (
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/sitter"
)

// DeleteContainerEnd deletes the container interface ifname (in contNS,
// reached with cont) when it is provably the attachment's: a veth whose
// host end, in host's namespace, pairs with it and is a port of the bridge
// called bridge or is called one of hostNames. It goes through the sitter s
// without waiting for the kernel's cleanup (deleteDetached), or at once
// when no sitter takes it (s nil: never). Anything else is left alone — another
// network's interface that holds the name (the one a failed ADD of this
// attachment ran into, say) is not ours to delete because an input named
// it. A missing interface is success.
//
// Equivalent to: ip -n $netns link del $ifname (after ip -d link show)
func DeleteContainerEnd(s *sitter.Client, host, cont *netlink.Handle, contNS *ns.NetNS, ifname, bridge string, hostNames []string, step func(string) func()) error {
	l, err := cont.LinkByName(ifname)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up %q: %w", ifname, err)
	}
	veth, ok := l.(*netlink.Veth)
	if !ok || !hostEndOurs(host, veth, contNS, bridge, hostNames) {
		return nil
	}
	if done, err := deleteDetached(s, cont, contNS, veth, step); done {
		return err
	}
	return link.DeleteLink(cont, ifname)
}

// hostEndOurs reports whether the container end c's peer is a veth of
// host's namespace that pairs with c (its own peer lives in contNS under
// c's index) and is a port of bridge or called one of names.
func hostEndOurs(host *netlink.Handle, c *netlink.Veth, contNS *ns.NetNS, bridge string, names []string) bool {
	if c.ParentIndex <= 0 {
		return false
	}
	peer, err := host.LinkByIndex(c.ParentIndex)
	if err != nil {
		return false
	}
	if v, ok := peer.(*netlink.Veth); !ok || v.ParentIndex != c.Index || !peerIn(host, peer, contNS) {
		return false
	}
	return slices.Contains(names, peer.Attrs().Name) || portOf(host, peer, bridge)
}

// portOf reports whether l is a port of the bridge called bridge.
func portOf(h *netlink.Handle, l netlink.Link, bridge string) bool {
	if l.Attrs().MasterIndex == 0 {
		return false
	}
	br, err := h.LinkByIndex(l.Attrs().MasterIndex)
	return err == nil && br.Attrs().Name == bridge
}

// DeleteHostPort deletes the host veth called name when it is a port of
// the bridge called bridge and provably the attachment's: named by the
// attachment's deterministic name (byOurName), or with its peer in the
// attachment's netns contNS (nil when it is gone). Anything else is left
// alone: another pod's port is not ours to delete because an input named
// it. A missing link is success.
//
// Equivalent to: ip link del $name (after ip -d link show $name)
func DeleteHostPort(h *netlink.Handle, name, bridge string, byOurName bool, contNS *ns.NetNS) error {
	l, err := h.LinkByName(name)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up host veth %q: %w", name, err)
	}
	if _, ok := l.(*netlink.Veth); !ok || !portOf(h, l, bridge) {
		return nil // not a port of our bridge: not ours to delete
	}
	if !byOurName && !peerIn(h, l, contNS) {
		return nil
	}
	return link.DeleteLink(h, name)
}

// peerIn reports whether the veth l's peer lives in contNS: the namespace
// ID the host gives l's link-netns is the one it gives contNS. Without a
// netns (it is gone), no peer can be proven there.
func peerIn(h *netlink.Handle, l netlink.Link, contNS *ns.NetNS) bool {
	if contNS == nil || l.Attrs().NetNsID < 0 {
		return false
	}
	id, err := h.GetNetNsIdByFd(int(contNS.Fd()))
	return err == nil && id >= 0 && id == l.Attrs().NetNsID
}
