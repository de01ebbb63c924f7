// Package linkops is the seam between the plugins and the link calls they
// make on an existing interface: look it up by name (one not-found error),
// set its MAC, MTU, transmit queue length, promiscuous and all-multicast
// modes, bring it up or down, and list its addresses through pkg/link's
// retrying dump. Netlink is the implementation over a netlink handle; Fake
// keeps links in memory and records each change as the `ip link set` line
// that would make it, for tests without root.
package linkops

import (
	"errors"
	"net"

	"github.com/vishvananda/netlink"
)

// ErrNotFound marks a link that does not exist.
var ErrNotFound = errors.New("link not found")

// Attrs are the attributes of a link the plugins read and set.
type Attrs struct {
	Index    int
	Name     string
	MAC      net.HardwareAddr
	MTU      int
	TxQLen   int
	Promisc  bool
	Allmulti bool
	Up       bool
}

// Links holds the link calls the plugins make. Setters take the link as
// Get returned it (by index, so a rename in between does not matter).
type Links interface {
	// Get returns the attributes of the link called name; a missing link
	// is an error wrapping ErrNotFound.
	Get(name string) (Attrs, error)
	SetMAC(l Attrs, mac net.HardwareAddr) error
	SetMTU(l Attrs, mtu int) error
	SetTxQLen(l Attrs, qlen int) error
	SetPromisc(l Attrs, on bool) error
	SetAllmulti(l Attrs, on bool) error
	SetUp(l Attrs, up bool) error
	// Addrs lists the addresses of l of a family (netlink.FAMILY_*).
	Addrs(l Attrs, family int) ([]netlink.Addr, error)
}
