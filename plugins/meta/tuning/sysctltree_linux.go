package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/types"
)

// sysctlTree is root/net (normally /proc/sys/net) of the calling thread's
// network namespace, opened once per call; every key is then opened
// beneath it (openat2 RESOLVE_BENEATH), in one lookup that also refuses a
// link leading out of it.
//
// Why once: each network namespace has a "net" entry of its own under
// /proc/sys, all with the same name and parent, and a lookup compares
// with every one that is cached (proc_sys_compare in d_lookup), so each
// path from /proc/sys costs time in proportion to the containers on the
// node. Beneath the open directory the names are this namespace's alone.
//
// Under the real /proc/sys, a per-interface IPv4 setting whose handler does
// nothing a netlink write skips (ifconf.IPv4Plain: arp_notify, arp_ignore,
// …) is read and written over netlink instead, and the tree is opened only
// for the other keys: then a call pays no lookup at all.
type sysctlTree struct {
	root  string
	fd    int                        // -1 until a key needs the tree
	links map[string]*ifconf.DevConf // by interface name, read over netlink
}

// procSys is the real /proc/sys, the only root whose keys netlink reaches.
const procSys = "/proc/sys"

func openSysctlTree(root string) (*sysctlTree, error) {
	return &sysctlTree{root: root, fd: -1, links: map[string]*ifconf.DevConf{}}, nil
}

// dir returns the descriptor of root/net, opened at the first need.
func (t *sysctlTree) dir() (int, error) {
	if t.fd >= 0 {
		return t.fd, nil
	}
	fd, err := unix.Open(filepath.Join(t.root, "net"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, types.Errorf(types.ErrIO, "sysctl root %s: %w", t.root, err)
	}
	t.fd = fd
	return fd, nil
}

func (t *sysctlTree) Close() error {
	if t.fd < 0 {
		return nil
	}
	return unix.Close(t.fd)
}

// linkKey returns the interface and the setting of rel when netlink can
// read and write it: net/ipv4/conf/<link>/<plain setting>, under the real
// /proc/sys, of a link that exists.
func (t *sysctlTree) linkKey(rel string) (*ifconf.DevConf, string, bool) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	if t.root != procSys || len(parts) != 5 || parts[0] != "net" || parts[1] != "ipv4" || parts[2] != "conf" ||
		parts[3] == "all" || parts[3] == "default" || !ifconf.IPv4Plain(parts[4]) {
		return nil, "", false
	}
	d, ok := t.links[parts[3]]
	if !ok {
		var err error
		if d, err = ifconf.ReadDevConf(parts[3], 0); err != nil {
			return nil, "", false // the tree says what is wrong
		}
		t.links[parts[3]] = d
	}
	return d, parts[4], true
}

// open opens the file of rel ("net/ipv4/conf/eth0/rp_filter") with flags.
// A file that does not exist is fs.ErrNotExist; one reached through a link
// leading out of root/net is an invalid configuration. Kernels without
// openat2 get a check of each path component, then an open by path.
func (t *sysctlTree) open(rel string, flags int) (*os.File, error) {
	under, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(rel)), "net/")
	if !ok {
		return nil, types.Errorf(types.ErrInvalidConfig, "sysctl key %q: not under net", rel)
	}
	dir, err := t.dir()
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat2(dir, under, &unix.OpenHow{
		Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOSYS):
		path, err := resolveByComponent(t.root, rel)
		if err != nil {
			return nil, err
		}
		return os.OpenFile(path, flags, 0)
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("sysctl %s: %w", rel, fs.ErrNotExist)
	case errors.Is(err, unix.EXDEV):
		return nil, types.Errorf(types.ErrInvalidConfig, "sysctl key %q: resolves outside %s", rel, filepath.Join(t.root, "net"))
	case err != nil:
		return nil, types.Errorf(types.ErrIO, "sysctl %s: %w", rel, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(t.root, rel)), nil
}

// Get returns the value of the sysctl rel, without the trailing newline.
func (t *sysctlTree) Get(rel string) (string, error) {
	if d, key, ok := t.linkKey(rel); ok {
		if v, ok := d.IPv4(key); ok {
			return strconv.Itoa(v), nil
		}
	}
	f, err := t.open(rel, unix.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return "", types.Errorf(types.ErrIO, "read sysctl %s: %w", rel, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// Set writes the sysctl rel. Equivalent to: sysctl -w rel=value
func (t *sysctlTree) Set(rel, value string) error {
	if d, key, ok := t.linkKey(rel); ok {
		if v, err := strconv.Atoi(strings.TrimSpace(value)); err == nil {
			delete(t.links, d.Name) // read again at the next Get
			if err := ifconf.SetIPv4Conf(d.Index, map[string]int{key: v}); err != nil {
				return fmt.Errorf("write sysctl %s=%s: %w", rel, value, err)
			}
			return nil
		}
	}
	f, err := t.open(rel, unix.O_WRONLY|unix.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(value))
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("write sysctl %s=%s: %w", rel, value, err)
	}
	return nil
}

// resolveByComponent resolves each symbolic link on the way to rel and
// compares the result with root/net (kernels without openat2).
func resolveByComponent(root, rel string) (string, error) {
	base, err := filepath.EvalSymlinks(filepath.Join(root, "net"))
	if err != nil {
		return "", types.Errorf(types.ErrIO, "sysctl root %s: %w", root, err)
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("sysctl %s: %w", rel, err)
	}
	if err != nil {
		return "", types.Errorf(types.ErrIO, "sysctl %s: %w", rel, err)
	}
	if !strings.HasPrefix(real, base+string(filepath.Separator)) {
		return "", types.Errorf(types.ErrInvalidConfig,
			"sysctl key %q: resolves to %s, outside %s", rel, real, filepath.Join(root, "net"))
	}
	return real, nil
}
