package k8s

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cgroupDirs lists the pods' cgroup root and everything below it, in every
// hierarchy the node mounted, deepest first.
func (n *node) cgroupDirs() []string {
	root := n.path("/sys/fs/cgroup")
	hierarchies, _ := os.ReadDir(root) // none mounted: nothing to list
	var dirs []string
	for _, h := range hierarchies {
		top := filepath.Join(root, h.Name(), n.cgroup)
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil // a cgroup that vanished, or was never made here, holds nothing
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// cgroupProcs lists the processes in the pods' cgroups: the containers,
// which have network namespaces of their own.
func (n *node) cgroupProcs() []int {
	var pids []int
	for _, dir := range n.cgroupDirs() {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")) // gone meanwhile: empty
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// removeCgroups removes the pods' cgroups, children first, so the machine's
// cgroup tree is left as it was. Equivalent to: rmdir /sys/fs/cgroup/*/$root/...
func (n *node) removeCgroups() {
	for _, dir := range n.cgroupDirs() {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			n.t.Errorf("removing cgroup %s: %v", dir, err)
		}
	}
}
