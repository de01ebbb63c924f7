package ifconf

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/sysctl"
)

// setIfPresent writes a sysctl given in slash form; a missing entry (IPv6
// disabled, interface gone) is not an error and reports false.
func setIfPresent(name, value string) (bool, error) {
	if err := sysctl.Set(name, value); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("setting %s=%s: %w", name, value, err)
	}
	return true, nil
}

// DisableRA makes the interface ignore IPv6 router advertisements
// (CVE-2020-10749), writing the sysctl only when it differs. It must run in
// the interface's namespace; without IPv6 it does nothing.
//
// Equivalent to: sysctl -w net.ipv6.conf.$name.accept_ra=0
func DisableRA(name string) error {
	d, err := ReadDevConf(name, 0)
	if err != nil {
		return SetUnlessEqual("net/ipv6/conf/"+name+"/accept_ra", "0")
	}
	return d.EnsureIPv6("accept_ra", 0)
}

// EnsureIPv6 writes the IPv6 setting key of the link d was read from
// when d shows another value; a link without IPv6 is left alone. Only the
// write goes through /proc/sys (the kernel takes no IPv6 settings over
// netlink).
func (d *DevConf) EnsureIPv6(key string, value int) error {
	if cur, ok := d.IPv6(key); ok && cur == value {
		return nil
	}
	_, err := setIfPresent("net/ipv6/conf/"+d.Name+"/"+key, strconv.Itoa(value))
	return err
}

// EnsureIPv4 sets the IPv4 setting key of the link d was read from over
// netlink when d shows another value; a link without IPv4 settings is left
// alone, as a missing sysctl is.
func (d *DevConf) EnsureIPv4(key string, value int) error {
	if cur, ok := d.IPv4(key); !ok || cur == value {
		return nil
	}
	return SetIPv4Conf(d.Index, map[string]int{key: value})
}

// EnsureIPv4Conf sets the IPv4 per-interface setting key of the link
// called name (or, when name is empty, with index), in the calling
// thread's namespace, unless it holds value already: one netlink request to
// read, and one to write when needed.
//
// Equivalent to: sysctl -w net.ipv4.conf.$name.$key=$value
func EnsureIPv4Conf(name string, index int, key string, value int) error {
	if !HasIPv4Conf(key) {
		return fmt.Errorf("net.ipv4.conf.*.%s: not a per-interface setting", key)
	}
	d, err := ReadDevConf(name, index)
	if err != nil {
		return err
	}
	return d.EnsureIPv4(key, value)
}

// EnableForwarding turns on IP forwarding for the families asked for, in the
// calling thread's namespace.
//
// Equivalent to: sysctl -w net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
func EnableForwarding(v4, v6 bool) error {
	if v4 {
		if err := ensureForwarding(unix.AF_INET, "net/ipv4/ip_forward"); err != nil {
			return err
		}
	}
	if v6 {
		if err := ensureForwarding(unix.AF_INET6, "net/ipv6/conf/all/forwarding"); err != nil {
			return err
		}
	}
	return nil
}

// ForwardingOff names, in dotted form, the forwarding sysctls of the
// families asked for that are not on: those EnableForwarding turns on.
//
// Equivalent to: sysctl net.ipv4.ip_forward net.ipv6.conf.all.forwarding
func ForwardingOff(v4, v6 bool) []string {
	var off []string
	for _, k := range [...]struct {
		on     bool
		family int
		key    string
	}{{v4, unix.AF_INET, "net/ipv4/ip_forward"}, {v6, unix.AF_INET6, "net/ipv6/conf/all/forwarding"}} {
		if k.on && !forwardingOn(k.family, k.key) {
			off = append(off, strings.ReplaceAll(k.key, "/", "."))
		}
	}
	return off
}

// forwardingOn reads a family's forwarding over netlink, and from the
// sysctl when netlink cannot tell: a /proc/sys lookup compares names with
// the entries of every network namespace that looked the same key up, so
// its cost grows with the pods on the node.
func forwardingOn(family int, key string) bool {
	if cur, err := netconfForwarding(family); err == nil {
		return cur == 1
	}
	v, err := sysctl.Get(key)
	return err == nil && v == "1"
}

// ensureForwarding writes the family's forwarding sysctl only when
// forwardingOn finds it off.
func ensureForwarding(family int, name string) error {
	if forwardingOn(family, name) {
		return nil
	}
	_, err := setIfPresent(name, "1")
	return err
}

// SetUnlessEqual writes a sysctl only when it holds another value, so that
// parallel ADDs do not rewrite global sysctls needlessly.
func SetUnlessEqual(name, value string) error {
	if cur, err := sysctl.Get(name); err == nil && cur == value {
		return nil
	}
	_, err := setIfPresent(name, value)
	return err
}
