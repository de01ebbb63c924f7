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
	for _, pid := range n.processes() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			n.T.Logf("killed process %d (%s) left in the node", pid, comm(pid))
		}
	}
	WaitFor(10*time.Second, func() bool { return len(n.processes()) == 0 })
	for _, dir := range n.cgroupDirs() {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			n.T.Errorf("removing cgroup %s: %v", dir, err)
		}
	}
	if err := n.holder.Process.Kill(); err != nil {
		n.T.Logf("killing the node's holder %d: %v", n.pid, err)
	}
	_ = n.holder.Wait() // it was killed: the error only says so
}

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
	for _, dir := range n.cgroupDirs() {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")) // gone meanwhile: empty
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				add(pid)
			}
		}
	}
	return pids
}

func comm(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)) // gone meanwhile: no name, for a log line
	return strings.TrimSpace(string(data))
}

// cgroupDirs lists CgroupRoot and everything below it, in every hierarchy
// the node mounted, deepest first.
func (n *Node) cgroupDirs() []string {
	if n.CgroupRoot == "" {
		return nil
	}
	root := n.Path("/sys/fs/cgroup")
	hierarchies, _ := os.ReadDir(root) // none mounted: nothing to list
	var dirs []string
	for _, h := range hierarchies {
		_ = filepath.WalkDir(filepath.Join(root, h.Name(), n.CgroupRoot), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil // a cgroup that vanished, or was never made here, holds nothing
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}
