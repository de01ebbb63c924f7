package linkops

import (
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
)

// Fake implements Links in memory. Each change is recorded as the
// `ip link set` line that would make it; a line Fail names fails instead,
// leaving the link as it was.
type Fake struct {
	mu    sync.Mutex
	links map[string]*Attrs
	addrs map[string][]netlink.Addr
	lines []string
	// Fail makes the change whose line it names fail with its error.
	Fail map[string]error
}

// NewFake returns a Fake holding the links given.
func NewFake(links ...Attrs) *Fake {
	f := &Fake{links: map[string]*Attrs{}, addrs: map[string][]netlink.Addr{}}
	for i, l := range links {
		if l.Index == 0 {
			l.Index = i + 1
		}
		f.links[l.Name] = &l
	}
	return f
}

// AddAddr gives the link called name an address, for Addrs.
func (f *Fake) AddAddr(name string, a netlink.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs[name] = append(f.addrs[name], a)
}

// Lines returns the changes made so far, in order, as `ip link set` lines.
func (f *Fake) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lines)
}

// Get returns a copy of the link's attributes.
func (f *Fake) Get(name string) (Attrs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[name]
	if !ok {
		return Attrs{}, fmt.Errorf("interface %q: %w", name, ErrNotFound)
	}
	out := *l
	out.MAC = slices.Clone(l.MAC)
	return out, nil
}

// set records line and applies change to the link, unless Fail names it.
func (f *Fake) set(l Attrs, line string, change func(*Attrs)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	line = "ip link set dev " + l.Name + " " + line
	if err := f.Fail[line]; err != nil {
		return fmt.Errorf("%s: %w", line, err)
	}
	cur, ok := f.links[l.Name]
	if !ok || cur.Index != l.Index {
		return fmt.Errorf("%s: %w", line, ErrNotFound)
	}
	f.lines = append(f.lines, line)
	change(cur)
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// SetMAC records: ip link set dev $l address $mac
func (f *Fake) SetMAC(l Attrs, mac net.HardwareAddr) error {
	return f.set(l, "address "+mac.String(), func(a *Attrs) { a.MAC = slices.Clone(mac) })
}

// SetMTU records: ip link set dev $l mtu $mtu
func (f *Fake) SetMTU(l Attrs, mtu int) error {
	return f.set(l, fmt.Sprintf("mtu %d", mtu), func(a *Attrs) { a.MTU = mtu })
}

// SetTxQLen records: ip link set dev $l txqueuelen $qlen
func (f *Fake) SetTxQLen(l Attrs, qlen int) error {
	return f.set(l, fmt.Sprintf("txqueuelen %d", qlen), func(a *Attrs) { a.TxQLen = qlen })
}

// SetPromisc records: ip link set dev $l promisc on|off
func (f *Fake) SetPromisc(l Attrs, on bool) error {
	return f.set(l, "promisc "+onOff(on), func(a *Attrs) { a.Promisc = on })
}

// SetAllmulti records: ip link set dev $l allmulticast on|off
func (f *Fake) SetAllmulti(l Attrs, on bool) error {
	return f.set(l, "allmulticast "+onOff(on), func(a *Attrs) { a.Allmulti = on })
}

// SetUp records: ip link set dev $l up|down
func (f *Fake) SetUp(l Attrs, up bool) error {
	word := "down"
	if up {
		word = "up"
	}
	return f.set(l, word, func(a *Attrs) { a.Up = up })
}

// Addrs returns the addresses given with AddAddr of the family.
func (f *Fake) Addrs(l Attrs, family int) ([]netlink.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.links[l.Name]; !ok {
		return nil, fmt.Errorf("interface %q: %w", l.Name, ErrNotFound)
	}
	var out []netlink.Addr
	for _, a := range f.addrs[l.Name] {
		v4 := a.IP.To4() != nil
		if family == netlink.FAMILY_ALL || (family == netlink.FAMILY_V4) == v4 {
			out = append(out, a)
		}
	}
	return out, nil
}
