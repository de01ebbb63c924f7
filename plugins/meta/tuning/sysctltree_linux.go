package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

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
type sysctlTree struct {
	root string
	fd   int
}

func openSysctlTree(root string) (*sysctlTree, error) {
	fd, err := unix.Open(filepath.Join(root, "net"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "sysctl root %s: %w", root, err)
	}
	return &sysctlTree{root: root, fd: fd}, nil
}

func (t *sysctlTree) Close() error { return unix.Close(t.fd) }

// open opens the file of rel ("net/ipv4/conf/eth0/rp_filter") with flags.
// A file that does not exist is fs.ErrNotExist; one reached through a link
// leading out of root/net is an invalid configuration. Kernels without
// openat2 get a check of each path component, then an open by path.
func (t *sysctlTree) open(rel string, flags int) (*os.File, error) {
	under, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(rel)), "net/")
	if !ok {
		return nil, types.Errorf(types.ErrInvalidConfig, "sysctl key %q: not under net", rel)
	}
	fd, err := unix.Openat2(t.fd, under, &unix.OpenHow{
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
