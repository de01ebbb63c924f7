package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cnisuite/test/crinode"
)

// cgroupScript mounts again, on an empty /sys/fs/cgroup, the hierarchies
// this process belongs to: the sandbox's fresh sysfs hides them, and runc
// needs them. Equivalent to: mount -t cgroup -o $controllers cgroup $dir.
func cgroupScript() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("reading cgroups: %w", err)
	}
	return crinode.CgroupMounts(string(data)), nil
}

// cgroup names a cgroup parent for the containers of one test; the
// runtimes create it in every hierarchy, and teardown removes it with its
// children, so the machine's cgroup tree is left as it was.
func (n *node) cgroup(name string) string {
	p := "/cnisuite-e2e-" + name
	n.cgroups = append(n.cgroups, p)
	return p
}

// removeCgroups removes the test's cgroups, children first, from every
// hierarchy the node mounted. Equivalent to: rmdir /sys/fs/cgroup/*/$path.
func (n *node) removeCgroups() {
	root := n.path("/sys/fs/cgroup")
	hierarchies, err := os.ReadDir(root)
	if err != nil {
		n.t.Logf("listing cgroup hierarchies: %v", err)
		return
	}
	for _, h := range hierarchies {
		for _, parent := range n.cgroups {
			dir := filepath.Join(root, h.Name(), parent)
			children, _ := os.ReadDir(dir) // absent when the runtime never used this hierarchy
			for _, c := range children {
				if c.IsDir() {
					n.rmdirCgroup(filepath.Join(dir, c.Name()))
				}
			}
			n.rmdirCgroup(dir)
		}
	}
}

func (n *node) rmdirCgroup(dir string) {
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		n.t.Errorf("removing cgroup %s: %v", strings.TrimPrefix(dir, n.path("")), err)
	}
}

// cgroupProcs lists the processes in the test's cgroups, in any hierarchy.
func (n *node) cgroupProcs() []int {
	var pids []int
	for _, parent := range n.cgroups {
		matches, _ := filepath.Glob(filepath.Join(n.path("/sys/fs/cgroup"), "*", parent)) // the pattern is valid
		for _, dir := range matches {
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Name() != "cgroup.procs" {
					return nil // a cgroup that vanished holds no process
				}
				data, _ := os.ReadFile(p) // likewise
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
	}
	return pids
}

// reapCgroup kills, by PID, every process left under a cgroup the test's
// runtime created outside the test's own parents (its default parent, for
// pods that name none, as critest's), and removes the cgroup with its
// descendants, deepest first, from every hierarchy.
func (n *node) reapCgroup(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(n.path("/sys/fs/cgroup"), "*", parent)) // the pattern is valid
	var tree []string
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				tree = append(tree, p)
			}
			return nil // a cgroup that vanished has nothing to remove
		})
	}
	for _, dir := range tree {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")) // likewise
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				n.t.Logf("killed process %d left in cgroup %s", pid, parent)
			}
		}
	}
	for i := len(tree) - 1; i >= 0; i-- { // WalkDir lists parents before children
		eventually(5*time.Second, func() bool {
			err := os.Remove(tree[i])
			return err == nil || os.IsNotExist(err)
		})
		if _, err := os.Stat(tree[i]); err == nil {
			n.t.Errorf("cgroup %s left", strings.TrimPrefix(tree[i], n.path("")))
		}
	}
}
