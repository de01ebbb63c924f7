package link

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrContainerIfaceExists is returned when the container already has an
// interface of the requested name.
var ErrContainerIfaceExists = errors.New("container interface already exists")

// VethOptions describes a veth pair between the host and a container.
type VethOptions struct {
	ContainerName string           // name inside the container (CNI_IFNAME)
	ContainerNS   int              // open file descriptor of the container netns
	HostName      string           // preferred host-side name; a random <HostPrefix>%08x name when empty or taken
	HostPrefix    string           // of a random host-side name; "" = "veth"
	HostNameExact bool             // HostName or nothing: a taken name is ErrHostNameTaken
	MTU           int              // both ends; 0 = kernel default
	MAC           net.HardwareAddr // container end; nil = kernel-chosen
}

// ErrHostNameTaken is returned when the exact host-side name asked for is
// the name of an existing link.
var ErrHostNameTaken = errors.New("host-side name is taken by an existing link")

// Pair is a veth pair as created: Host lives in the caller's namespace,
// Container in the container's.
type Pair struct {
	Host      netlink.Link
	Container netlink.Link
}

// maxNameTries bounds the retries on a host-side name clash.
const maxNameTries = 10

// CreateVeth creates a veth pair whose container end is created directly in
// the container namespace under its final name; the host end is created in
// the namespace of h. host and cont are handles on the two namespaces.
//
// Equivalent to: ip link add $host [mtu $mtu] type veth peer name $ifname
// netns $container [address $mac] [mtu $mtu]
func CreateVeth(host, cont *netlink.Handle, o VethOptions) (Pair, error) {
	name := o.HostName
	for try := 0; try < maxNameTries; try++ {
		if name == "" {
			var err error
			if name, err = RandomVethName(o.HostPrefix); err != nil {
				return Pair{}, err
			}
		}
		err := host.LinkAdd(vethSpec(o, name))
		if err == nil {
			return readPair(host, cont, name, o.ContainerName)
		}
		if !errors.Is(err, unix.EEXIST) {
			return Pair{}, fmt.Errorf("creating veth pair %q/%q: %w", name, o.ContainerName, err)
		}
		if _, lerr := cont.LinkByName(o.ContainerName); lerr == nil {
			return Pair{}, fmt.Errorf("interface %q in the container: %w", o.ContainerName, ErrContainerIfaceExists)
		}
		if o.HostNameExact {
			return Pair{}, fmt.Errorf("%q: %w", name, ErrHostNameTaken)
		}
		name = "" // the host-side name is taken: try a random one
	}
	return Pair{}, fmt.Errorf("creating veth pair for %q: no free host-side name after %d tries", o.ContainerName, maxNameTries)
}

func vethSpec(o VethOptions, hostName string) *netlink.Veth {
	attrs := netlink.NewLinkAttrs() // TxQLen -1: keep the kernel's default queue length
	attrs.Name = o.ContainerName
	attrs.MTU = o.MTU
	attrs.HardwareAddr = o.MAC
	attrs.Namespace = netlink.NsFd(o.ContainerNS)
	return &netlink.Veth{LinkAttrs: attrs, PeerName: hostName, PeerTxQLen: -1}
}

func readPair(host, cont *netlink.Handle, hostName, contName string) (Pair, error) {
	h, err := host.LinkByName(hostName)
	if err != nil {
		return Pair{}, fmt.Errorf("reading new host veth %q: %w", hostName, err)
	}
	c, err := cont.LinkByName(contName)
	if err != nil {
		return Pair{}, fmt.Errorf("reading new container veth %q: %w", contName, err)
	}
	return Pair{Host: h, Container: c}, nil
}

// RandomVethName returns a name of the form <prefix>%08x ("veth" when
// prefix is empty).
func RandomVethName(prefix string) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a veth name: %w", err)
	}
	if prefix == "" {
		prefix = "veth"
	}
	return prefix + hex.EncodeToString(b), nil
}

// DeleteLink deletes the link called name; a missing link is success. A nil
// h acts in the calling thread's namespace.
//
// Equivalent to: ip link del $name
func DeleteLink(h *netlink.Handle, name string) error {
	h = orDefault(h)
	l, err := h.LinkByName(name)
	if err != nil {
		if IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("looking up %q: %w", name, err)
	}
	if err := h.LinkDel(l); err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting %q: %w", name, err)
	}
	return nil
}

// PortOptions are the bridge-port flags of a host veth.
type PortOptions struct {
	Hairpin  bool // reflect frames back out of the port they came in on
	Isolated bool // isolated ports cannot talk to each other, only to others
}

// AttachPort enslaves l to the bridge, sets the port flags and sets l up.
//
// Equivalent to: ip link set $l master $bridge up;
// bridge link set dev $l [hairpin on] [isolated on]
func AttachPort(h *netlink.Handle, l, bridge netlink.Link, o PortOptions) error {
	name := l.Attrs().Name
	if err := h.LinkSetMasterByIndex(l, bridge.Attrs().Index); err != nil {
		return fmt.Errorf("attaching %q to bridge %q: %w", name, bridge.Attrs().Name, err)
	}
	if o.Hairpin {
		if err := h.LinkSetHairpin(l, true); err != nil {
			return fmt.Errorf("setting hairpin on port %q: %w", name, err)
		}
	}
	if o.Isolated {
		if err := h.LinkSetIsolated(l, true); err != nil {
			return fmt.Errorf("setting isolated on port %q: %w", name, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("setting %q up: %w", name, err)
	}
	return nil
}

// addrGenModeNone is IN6_ADDR_GEN_MODE_NONE (linux/if_link.h).
const addrGenModeNone = 1

// NoLinkLocal keeps the kernel from giving l an IPv6 link-local address
// when it comes up; it must run before l is up. A bridge port needs no
// address of its own (the bridge holds the gateway's), and each one the
// host side holds costs every later veth deletion: the kernel walks the
// whole IPv6 routing table of the host's namespace on an interface's
// removal (addrconf_ifdown -> fib6_clean_all), and a link-local address
// adds per-interface routes to it, so that walk grows with the pods on the
// node. Without one the port also sends no DAD or MLD packets for the
// bridge to flood to every other port. A kernel without IPv6 has nothing
// to keep away.
//
// Equivalent to: ip link set $l addrgenmode none
func NoLinkLocal(h *netlink.Handle, l netlink.Link) error {
	err := orDefault(h).LinkSetIP6AddrGenMode(l, addrGenModeNone)
	if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting %q IPv6 address generation mode none: %w", l.Attrs().Name, err)
	}
	return nil
}

// orDefault returns h, or for nil a handle acting like netlink's package
// functions: on sockets of the calling thread's namespace.
func orDefault(h *netlink.Handle) *netlink.Handle {
	if h == nil {
		return &netlink.Handle{}
	}
	return h
}
