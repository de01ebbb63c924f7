package link

import (
	"errors"
	"fmt"
	"io/fs"

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
	return setUnlessEqual("net/ipv6/conf/"+name+"/accept_ra", "0")
}

// EnableForwarding turns on IP forwarding for the families asked for, in the
// calling thread's namespace.
//
// Equivalent to: sysctl -w net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
func EnableForwarding(v4, v6 bool) error {
	if v4 {
		if err := setUnlessEqual("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
	}
	if v6 {
		if err := setUnlessEqual("net/ipv6/conf/all/forwarding", "1"); err != nil {
			return err
		}
	}
	return nil
}

// setUnlessEqual writes a sysctl only when it holds another value, so that
// parallel ADDs do not rewrite global sysctls needlessly.
func setUnlessEqual(name, value string) error {
	if cur, err := sysctl.Get(name); err == nil && cur == value {
		return nil
	}
	_, err := setIfPresent(name, value)
	return err
}
