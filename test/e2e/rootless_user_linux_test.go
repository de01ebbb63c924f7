package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cnisuite/test/nodens"
)

// The throwaway user rootless runtimes run as: it exists only in the
// node's mount namespace (private copies of /etc/passwd, /etc/group,
// /etc/subuid and /etc/subgid are bound there), with subordinate ids
// from rootlessSubID.
const (
	rootlessName  = "cnirl"
	rootlessUID   = 64044
	rootlessSubID = 200000
)

// rootlessUser is that user on a node: its home and runtime directory, the
// PATH its commands run with and its runtime's command-line tool.
type rootlessUser struct {
	n         *node
	home, xdg string
	path      string
	cli       string
}

// newRootlessUser makes the user in the node's mount namespace, with a
// 0666 /dev/net/tun there (slirp4netns opens it as the user; the
// machine's own node is left as it is), and dirs first on its PATH; cli
// is its runtime's command-line tool. Every process of the user ends with
// the test.
func newRootlessUser(n *node, cli string, dirs ...string) *rootlessUser {
	n.T.Helper()
	u := &rootlessUser{n: n, home: "/var/lib/containers/" + rootlessName, xdg: fmt.Sprintf("/run/user/%d", rootlessUID),
		path: strings.Join(append(dirs, "/usr/sbin:/usr/bin:/sbin:/bin"), ":"), cli: cli}
	u.bindAccounts()
	n.Must("mknod", "-m", "0666", "/run/cnisuite-e2e-tun", "c", "10", "200")
	n.Must("mount", "--bind", "/run/cnisuite-e2e-tun", "/dev/net/tun")
	n.Must("mkdir", "-p", "-m", "0700", u.home, u.xdg)
	u.own()
	n.T.Cleanup(u.teardown)
	return u
}

// bindAccounts binds copies of the account files with the user added over
// the node's (only in its mount namespace).
func (u *rootlessUser) bindAccounts() {
	extra := map[string]string{
		"passwd": fmt.Sprintf("%s:x:%d:%d::%s:/bin/sh\n", rootlessName, rootlessUID, rootlessUID, u.home),
		"group":  fmt.Sprintf("%s:x:%d:\n", rootlessName, rootlessUID),
		"subuid": fmt.Sprintf("%s:%d:65536\n", rootlessName, rootlessSubID),
		"subgid": fmt.Sprintf("%s:%d:65536\n", rootlessName, rootlessSubID),
	}
	for name, line := range extra {
		old, err := os.ReadFile(u.n.Path("/etc/" + name))
		if os.IsNotExist(err) {
			u.n.T.Skipf("/etc/%s does not exist: nothing to bind the copy over", name)
		}
		if err != nil {
			u.n.T.Fatal(err)
		}
		copyPath := "/run/cnisuite-e2e-" + name
		u.n.WriteFile(copyPath, append(old, line...), 0o644)
		u.n.Must("mount", "--bind", copyPath, "/etc/"+name)
	}
}

// writeFiles writes files under the user's home (path → content); own
// gives them to the user.
func (u *rootlessUser) writeFiles(files map[string]string) {
	for name, content := range files {
		u.n.WriteFile(u.home+name, []byte(content), 0o644)
	}
}

// own gives the home and the runtime directory, with all below, to the user.
func (u *rootlessUser) own() {
	u.n.Must("chown", "-R", fmt.Sprintf("%d:%d", rootlessUID, rootlessUID), u.home, u.xdg)
}

// args are setpriv's arguments that run name as the user, with the
// environment a login gives.
func (u *rootlessUser) args(name string, args ...string) []string {
	return append([]string{"--reuid=" + strconv.Itoa(rootlessUID), "--regid=" + strconv.Itoa(rootlessUID), "--init-groups", "--",
		"env", "-i", "HOME=" + u.home, "USER=" + rootlessName, "XDG_RUNTIME_DIR=" + u.xdg, "PATH=" + u.path, name}, args...)
}

// as runs name as the user inside the node, bounded by timeout.
func (u *rootlessUser) as(timeout time.Duration, name string, args ...string) (string, error) {
	return u.n.Run(timeout, "setpriv", u.args(name, args...)...)
}

// runtime runs the runtime's command-line tool as the user.
func (u *rootlessUser) runtime(args ...string) (string, error) {
	return u.as(2*time.Minute, u.cli, args...)
}

// must is runtime, failing the test when the tool fails.
func (u *rootlessUser) must(args ...string) string {
	u.n.T.Helper()
	out, err := u.runtime(args...)
	if err != nil {
		u.n.T.Fatal(err)
	}
	return out
}

// switchTo puts our plugins, or the reference's, from dir in the plugin
// directory bin, each replaced at once (a new file renamed over the old),
// as a package does.
func (u *rootlessUser) switchTo(bin, dir string) {
	u.n.T.Helper()
	for _, name := range plugins {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			u.n.T.Fatal(err)
		}
		tmp := u.n.Path(filepath.Join(bin, "."+name+".new"))
		if err := os.WriteFile(tmp, data, 0o755); err != nil {
			u.n.T.Fatal(err)
		}
		if err := os.Rename(tmp, u.n.Path(filepath.Join(bin, name))); err != nil {
			u.n.T.Fatal(err)
		}
	}
	u.n.T.Logf("the plugins are now those of %s", dir)
}

// requireRuntimeDirClean fails when the user's runtime directory holds
// state of ours.
func (u *rootlessUser) requireRuntimeDirClean() {
	u.n.T.Helper()
	root := u.n.Path(u.xdg)
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // gone mid-walk
		}
		rel := strings.TrimPrefix(path, root)
		for _, ours := range []string{"/cni", ".host-local", "last_reserved_ip", "bridge-locks", "cnisuite"} {
			if strings.Contains(rel, ours) {
				u.n.T.Errorf("left in $XDG_RUNTIME_DIR: %s", rel)
				return filepath.SkipDir
			}
		}
		return nil
	})
}

// teardown ends every process of the user and of its subordinate ids
// (the runtime's daemons, slirp4netns, port forwarders, the containers),
// each by its pid: they all descend from this test's commands.
func (u *rootlessUser) teardown() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil {
			continue
		}
		ours := st.Uid == rootlessUID || (st.Uid >= rootlessSubID && st.Uid < rootlessSubID+65536)
		if ours && !zombie(pid) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			u.n.T.Logf("killed process %d (%s) of the rootless user", pid, nodens.Comm(pid))
		}
	}
}

// zombie reports whether process pid has exited and waits for its parent
// to reap it: killing it again does nothing.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

// lastLine is the last line of out: a rootless runtime's answer after its
// warnings ("/" is not a shared mount here).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
