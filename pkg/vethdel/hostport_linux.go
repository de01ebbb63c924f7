package vethdel

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
)

// DeleteContainerEnd deletes the container interface ifname (in contNS,
// reached with cont): a veth pair through the helper h without waiting for
// the kernel's cleanup (DeleteDetached), anything else, or a pair the
// helper cannot take, at once. A missing interface is success.
//
// Equivalent to: ip -n $netns link del $ifname
func (h *Helper) DeleteContainerEnd(host, cont *netlink.Handle, contNS *ns.NetNS, ifname string, step func(string) func()) error {
	l, err := cont.LinkByName(ifname)
	if err != nil {
		if link.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up %q: %w", ifname, err)
	}
	if veth, ok := l.(*netlink.Veth); ok {
		if done, err := h.DeleteDetached(host, cont, contNS, veth, step); done {
			return err
		}
	}
	return link.DeleteLink(cont, ifname)
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
	if _, ok := l.(*netlink.Veth); !ok || l.Attrs().MasterIndex == 0 {
		return nil
	}
	br, err := h.LinkByIndex(l.Attrs().MasterIndex)
	if err != nil || br.Attrs().Name != bridge {
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
