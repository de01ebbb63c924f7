package resync

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Plugins are the plugins that write records.
var Plugins = []string{"bridge", "portmap"}

// mainPackages are the Go main packages of Plugins: a binary is one of
// our plugins when its build information names its package.
var mainPackages = map[string]string{
	"bridge":  "cnisuite/plugins/main/bridge",
	"portmap": "cnisuite/plugins/meta/portmap",
}

// PackageBinDir is where the cnisuite-tools package keeps its copy of the
// plugins (docs/packaging.md).
const PackageBinDir = "/usr/lib/cnisuite/bin"

// DefaultBinDirs are the directories searched for the plugins when the
// operator names none: the one cnisuite itself was started from (a
// release tarball and `make build` put the plugins beside it), the
// package's, and /opt/cni/bin, where runtimes look by default. A file
// there of a plugin's name that is not our plugin (iproute2's
// /usr/sbin/bridge beside /usr/sbin/cnisuite, a reference plugin) is
// passed over.
func DefaultBinDirs() []string {
	dirs := []string{PackageBinDir, "/opt/cni/bin"}
	if exe, err := os.Executable(); err == nil {
		dirs = append([]string{filepath.Dir(exe)}, dirs...)
	}
	return dirs
}

// finder finds the binary that repairs a record: the record's plugin
// type, a file name, in the plugin directories, the first that is our
// plugin of the record's kind. Never a path read from a record: a file
// below /run/cnisuite can name which of our plugins runs, not a program.
type finder struct {
	dirs []string
	// ours checks that the file at path is our plugin (ourPlugin).
	ours  func(path, plugin string) error
	found map[[2]string]result
}

type result struct {
	path string
	err  error
}

func newFinder(dirs []string, ours func(path, plugin string) error) *finder {
	if len(dirs) == 0 {
		dirs = DefaultBinDirs()
	}
	if ours == nil {
		ours = ourPlugin
	}
	return &finder{dirs: dirs, ours: ours, found: map[[2]string]result{}}
}

// find returns the binary of plugin type typ (a plain file name, checked
// by pkg/records) that repairs plugin's records.
func (f *finder) find(plugin, typ string) (string, error) {
	key := [2]string{plugin, typ}
	if r, ok := f.found[key]; ok {
		return r.path, r.err
	}
	var refused []string
	r := result{err: fmt.Errorf("plugin type %q: no %s of cnisuite in %s (give -bindir)", typ, plugin, strings.Join(f.dirs, ":"))}
	for _, dir := range f.dirs {
		path := filepath.Join(dir, typ)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if err := f.ours(path, plugin); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		r = result{path: path}
		break
	}
	if r.err != nil && len(refused) > 0 {
		r.err = fmt.Errorf("%w; passed over: %s", r.err, strings.Join(refused, "; "))
	}
	f.found[key] = r
	return r.path, r.err
}

// ourPlugin checks that the file at path is cnisuite's plugin of that
// name, without running it: a regular file that only its owner (root, or
// the user cnisuite runs as) can write, whose Go build information names
// the plugin's main package of this module.
func ourPlugin(path, plugin string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file", path)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s: writable by others than its owner (mode %04o)", path, st.Mode().Perm())
	case sys == nil || sys.Uid != 0 && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s: owned by another user", path)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: not a Go program: %w", path, err)
	}
	if want := mainPackages[plugin]; info.Path != want {
		return fmt.Errorf("%s: %w (its package is %q, want %q)", path, errNotOurs, info.Path, want)
	}
	return nil
}

// errNotOurs marks a binary that is not the cnisuite plugin asked for.
var errNotOurs = errors.New("not cnisuite's plugin")
