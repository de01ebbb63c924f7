package linkops

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/link"
)

// Netlink implements Links over a netlink handle; a nil H acts in the
// namespace of the calling thread.
type Netlink struct {
	H *netlink.Handle
}

func (n Netlink) handle() *netlink.Handle {
	if n.H == nil {
		return &netlink.Handle{} // the package's sockets, in the thread's namespace
	}
	return n.H
}

// device names l for the kernel: netlink's setters need only its index.
func device(l Attrs) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: l.Index, Name: l.Name}}
}

// Get is equivalent to: ip -d link show dev $name
func (n Netlink) Get(name string) (Attrs, error) {
	l, err := n.handle().LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return Attrs{}, fmt.Errorf("interface %q: %w", name, ErrNotFound)
		}
		return Attrs{}, fmt.Errorf("interface %q: %w", name, err)
	}
	a := l.Attrs()
	return Attrs{
		Index: a.Index, Name: a.Name, MAC: a.HardwareAddr, MTU: a.MTU, TxQLen: a.TxQLen,
		Promisc:  a.RawFlags&unix.IFF_PROMISC != 0,
		Allmulti: a.RawFlags&unix.IFF_ALLMULTI != 0,
		Up:       a.RawFlags&unix.IFF_UP != 0,
	}, nil
}

// SetMAC is equivalent to: ip link set dev $l address $mac
func (n Netlink) SetMAC(l Attrs, mac net.HardwareAddr) error {
	if err := n.handle().LinkSetHardwareAddr(device(l), mac); err != nil {
		return fmt.Errorf("setting mac %s on %q: %w", mac, l.Name, err)
	}
	return nil
}

// SetMTU is equivalent to: ip link set dev $l mtu $mtu
func (n Netlink) SetMTU(l Attrs, mtu int) error {
	if err := n.handle().LinkSetMTU(device(l), mtu); err != nil {
		return fmt.Errorf("setting mtu %d on %q: %w", mtu, l.Name, err)
	}
	return nil
}

// SetTxQLen is equivalent to: ip link set dev $l txqueuelen $qlen
func (n Netlink) SetTxQLen(l Attrs, qlen int) error {
	if err := n.handle().LinkSetTxQLen(device(l), qlen); err != nil {
		return fmt.Errorf("setting txQLen %d on %q: %w", qlen, l.Name, err)
	}
	return nil
}

// SetPromisc is equivalent to: ip link set dev $l promisc on|off
func (n Netlink) SetPromisc(l Attrs, on bool) error {
	h, set := n.handle(), n.handle().SetPromiscOff
	if on {
		set = h.SetPromiscOn
	}
	if err := set(device(l)); err != nil {
		return fmt.Errorf("setting promisc %t on %q: %w", on, l.Name, err)
	}
	return nil
}

// SetAllmulti is equivalent to: ip link set dev $l allmulticast on|off
func (n Netlink) SetAllmulti(l Attrs, on bool) error {
	h, set := n.handle(), n.handle().LinkSetAllmulticastOff
	if on {
		set = h.LinkSetAllmulticastOn
	}
	if err := set(device(l)); err != nil {
		return fmt.Errorf("setting allmulti %t on %q: %w", on, l.Name, err)
	}
	return nil
}

// SetUp is equivalent to: ip link set dev $l up|down
func (n Netlink) SetUp(l Attrs, up bool) error {
	h, set := n.handle(), n.handle().LinkSetDown
	if up {
		set = h.LinkSetUp
	}
	if err := set(device(l)); err != nil {
		return fmt.Errorf("setting %q up=%t: %w", l.Name, up, err)
	}
	return nil
}

// Addrs is equivalent to: ip addr show dev $l (retrying interrupted dumps)
func (n Netlink) Addrs(l Attrs, family int) ([]netlink.Addr, error) {
	return link.AddrList(n.handle(), device(l), family)
}
