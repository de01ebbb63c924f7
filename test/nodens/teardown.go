package nodens

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// teardown kills every process left in the node, then the holder, and
// removes the node's cgroups.
func (n *Node) teardown() {
	n.kill(n.processes(), "left in the node")
	WaitFor(10*time.Second, func() bool { return len(n.processes()) == 0 })
	n.removeCgroups(n.cgroupDirs(n.cgroups...))
	if err := n.holder.Process.Kill(); err != nil {
		n.T.Logf("killing the node's holder %d: %v", n.pid, err)
	}
	_ = n.holder.Wait() // it was killed: the error only says so
}

// Reap kills, by PID, every process in cgroup (a path, the same in every
// hierarchy, that is not the node's: a runtime's default parent) and
// below it, and removes those cgroups, deepest first; one left fails the
// test.
func (n *Node) Reap(cgroup string) {
	n.T.Helper()
	dirs := n.cgroupDirs(cgroup)
	n.kill(procsIn(dirs), "left in cgroup "+cgroup)
	n.removeCgroups(dirs)
}

// CgroupProcs lists the processes in the node's cgroups, in any hierarchy.
func (n *Node) CgroupProcs() []int { return procsIn(n.cgroupDirs(n.cgroups...)) }

// processes lists the node's processes other than the holder and the
// test: those in its network namespace, and those in its cgroups.
func (n *Node) processes() []int {
	seen := map[int]bool{n.pid: true, os.Getpid(): true}
	var pids []int
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	entries, _ := os.ReadDir("/proc") // always readable; an error leaves nothing to kill
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ino, err := netnsInode(pid); err == nil && ino == n.netns {
			add(pid)
		}
	}
	for _, pid := range n.CgroupProcs() {
		add(pid)
	}
	return pids
}

// kill sends SIGKILL to pids, logging each it reached as left where.
func (n *Node) kill(pids []int, where string) {
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			n.T.Logf("killed process %d (%s) %s", pid, Comm(pid), where)
		}
	}
}

// Comm is a process's command name, empty once it is gone (for messages).
func Comm(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)) // gone meanwhile: no name, for a log line
	return strings.TrimSpace(string(data))
}

// procsIn lists the processes in the cgroups dirs.
func procsIn(dirs []string) []int {
	var pids []int
	for _, dir := range dirs {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")) // gone meanwhile: empty
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// cgroupDirs lists the cgroups and everything below them, in every
// hierarchy the node mounted, deepest first.
func (n *Node) cgroupDirs(cgroups ...string) []string {
	root := n.Path("/sys/fs/cgroup")
	hierarchies, _ := os.ReadDir(root) // none mounted: nothing to list
	var dirs []string
	for _, h := range hierarchies {
		for _, c := range cgroups {
			_ = filepath.WalkDir(filepath.Join(root, h.Name(), c), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil // a cgroup that vanished, or was never made here, holds nothing
			})
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// removeCgroups removes the cgroups dirs in order, each once its last
// process has gone (at most 5 s); one left fails the test.
func (n *Node) removeCgroups(dirs []string) {
	for _, dir := range dirs {
		var err error
		WaitFor(5*time.Second, func() bool {
			err = os.Remove(dir)
			return err == nil || os.IsNotExist(err)
		})
		if err != nil && !os.IsNotExist(err) {
			n.T.Errorf("removing cgroup %s: %v", strings.TrimPrefix(dir, n.Path("")), err)
		}
	}
}
