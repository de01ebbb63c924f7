// Package rootless tells whether a plugin runs with the node's privileges,
// and where its state goes when it does not.
//
// Rootless runtimes (rootless podman, nerdctl and BuildKit, k3s rootless)
// run the plugins as uid 0 of a user namespace of their own, with
// XDG_RUNTIME_DIR set to the user's runtime directory. Most of them make
// the node's state directories writable for the plugins in a mount
// namespace of their own: rootless podman binds
// $XDG_RUNTIME_DIR/libpod/tmp/rootless-netns/{var/lib/cni,run} over
// /var/lib/cni and /run, RootlessKit's containerd-rootless.sh binds
// ~/.local/share/cni over /var/lib/cni and copies /run up. The reference
// plugins keep their state there, so ours do too: a state directory
// defaults to the node's path whenever it can be written where the plugin
// runs, and to $XDG_RUNTIME_DIR/cni/<name> only when it cannot (a runtime
// that binds nothing; /var/lib/cni is then the real root's).
package rootless

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// uidMapPath is the current process's uid map.
const uidMapPath = "/proc/self/uid_map"

// NodeRoot reports whether the process has the node's root: uid 0 in the
// initial user namespace, whose uid map is the whole range "0 0 4294967295".
// Read once per process (a process does not change user namespace):
// sysctlkeep, records, the firewall's backend choice and bridge each ask
// during one call.
var NodeRoot = sync.OnceValue(nodeRoot)

func nodeRoot() bool {
	if os.Geteuid() != 0 {
		return false
	}
	data, err := os.ReadFile(uidMapPath)
	if err != nil {
		return true // no user namespaces in this kernel: the initial one
	}
	return isInitialMap(string(data))
}

func isInitialMap(m string) bool {
	fields := strings.Fields(m)
	return len(fields) == 3 && fields[0] == "0" && fields[1] == "0" && fields[2] == "4294967295"
}

// StateDir is the default of a state directory: systemPath for the node's
// root, and for a rootless runtime whose mount namespace lets the plugin
// write there; otherwise $XDG_RUNTIME_DIR/cni/<name>, when the call's
// environment env sets XDG_RUNTIME_DIR to an absolute path, saying so on
// stderr once per process; systemPath again without it (and the error of
// the first write says why). Whether systemPath can be written is tried,
// not derived from uids (Writable).
func StateDir(systemPath, name string, env []string) string {
	if NodeRoot() {
		return systemPath
	}
	dir, why := choose(systemPath, name, env, Writable)
	if why != nil {
		fallbackNotice.Do(func() {
			fmt.Fprintf(os.Stderr, "cnisuite: state directory %s cannot be written here (%v): using %s and "+
				"$XDG_RUNTIME_DIR/cni for every state directory that cannot\n", systemPath, why, dir)
		})
	}
	return dir
}

// fallbackNotice says once per process (one call of a plugin) that state
// went under $XDG_RUNTIME_DIR.
var fallbackNotice sync.Once

// choose is StateDir's choice without the node's root, with canWrite
// telling whether a directory can be written: the directory, and why
// systemPath was not taken when the choice fell back to $XDG_RUNTIME_DIR
// (nil otherwise).
func choose(systemPath, name string, env []string, canWrite func(string) error) (string, error) {
	xdg := lookup(env, "XDG_RUNTIME_DIR")
	if !filepath.IsAbs(xdg) {
		return systemPath, nil
	}
	err := canWrite(systemPath)
	if err == nil {
		return systemPath, nil
	}
	return filepath.Join(xdg, "cni", name), err
}

// Writable reports (nil) whether dir can be written in this process's
// mount namespace with its credentials: it makes, and removes at once, a
// directory of its own in dir or, when dir does not exist yet, in its
// nearest existing parent (where dir would be made). Nothing else is
// created: dir keeps the mode its user creates it with.
func Writable(dir string) error {
	at := filepath.Clean(dir)
	for {
		fi, err := os.Stat(at)
		if err == nil && !fi.IsDir() {
			return &fs.PathError{Op: "probe", Path: at, Err: syscall.ENOTDIR}
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || at == "/" {
			return err
		}
		at = filepath.Dir(at)
	}
	probe, err := os.MkdirTemp(at, ".cnisuite-probe-")
	if err != nil {
		return err
	}
	return os.Remove(probe)
}

// Hint is what an error about an unwritable state directory adds when the
// plugin runs without the node's root, "" otherwise.
func Hint(key string) string {
	if NodeRoot() {
		return ""
	}
	return "; the plugin runs without the node's root (a rootless runtime): set " + key +
		" to a directory this user can write, or run it with XDG_RUNTIME_DIR set (the default is then $XDG_RUNTIME_DIR/cni)"
}

func lookup(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
