// Package sysctl reads and writes kernel parameters under /proc/sys/net,
// and nowhere else.
package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideNet is returned for a name that does not resolve under net.
var ErrOutsideNet = errors.New("sysctl is not under net")

// FS is a sysctl tree rooted at Root (normally /proc/sys).
type FS struct {
	Root string
}

// Default is the machine's /proc/sys.
var Default = FS{Root: "/proc/sys"}

// Get reads a sysctl of the default tree.
func Get(name string) (string, error) { return Default.Get(name) }

// Set writes a sysctl of the default tree.
func Set(name, value string) error { return Default.Set(name, value) }

// Path returns the file behind a sysctl name written with dots
// ("net.ipv4.ip_forward") or slashes ("net/ipv4/conf/eth0.100/forwarding").
// With dots, an interface name containing a dot cannot be told apart, so
// callers with such names use slashes. The name must stay under net/.
func (fs FS) Path(name string) (string, error) {
	rel := name
	if !strings.Contains(name, "/") {
		rel = strings.ReplaceAll(name, ".", "/")
	}
	clean := filepath.Clean("/" + rel)
	if clean != "/"+rel || !strings.HasPrefix(clean, "/net/") {
		return "", fmt.Errorf("%w: %q", ErrOutsideNet, name)
	}
	return filepath.Join(fs.Root, clean), nil
}

// Get returns the value of a sysctl, without the trailing newline.
func (fs FS) Get(name string) (string, error) {
	p, err := fs.Path(name)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// Set writes a sysctl. Equivalent to: sysctl -w name=value
func (fs FS) Set(name, value string) error {
	p, err := fs.Path(name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// Ensure writes a sysctl only when its value differs, sparing a write
// (and the kernel work behind it) on the common path.
func (fs FS) Ensure(name, value string) error {
	if cur, err := fs.Get(name); err == nil && cur == value {
		return nil
	}
	return fs.Set(name, value)
}
