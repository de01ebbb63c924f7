package e2e

import (
	"fmt"
	"os"

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
// runtimes create it in every hierarchy, and the node's teardown removes
// it with its children, so the machine's cgroup tree is left as it was.
func (n *node) cgroup(name string) string { return n.AddCgroup("/cnisuite-e2e-" + name) }
