// Package rootless tells whether a plugin runs with the node's privileges,
// and where its state goes when it does not.
//
// Rootless runtimes (rootless podman, nerdctl and BuildKit, k3s rootless)
// run the plugins as uid 0 of a user namespace of their own, with
// XDG_RUNTIME_DIR set to the user's runtime directory. There, /var/lib/cni
// and /run/cni belong to the real root: creating anything in them fails
// with "permission denied". State directories then default to
// $XDG_RUNTIME_DIR/cni/<name>, as netavark keeps its state under the same
// directory.
package rootless

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
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
// root; $XDG_RUNTIME_DIR/cni/<name> otherwise, when the call's environment
// env sets XDG_RUNTIME_DIR to an absolute path; systemPath again without
// it (and the error of the first write says why).
func StateDir(systemPath, name string, env []string) string {
	if NodeRoot() {
		return systemPath
	}
	if xdg := lookup(env, "XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "cni", name)
	}
	return systemPath
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
