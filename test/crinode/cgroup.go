package crinode

import (
	"fmt"
	"strings"
)

// CgroupMounts renders, as a shell script, the mounts for the hierarchies
// a /proc/self/cgroup file lists: v1 ones (and the hybrid v2 one) under a
// tmpfs, or the single v2 one; nothing when /sys/fs/cgroup is not empty.
// Equivalent to: mount -t cgroup -o $controllers cgroup $dir, per hierarchy.
func CgroupMounts(procSelfCgroup string) string {
	var mounts []string
	v1 := false
	for _, line := range strings.Split(strings.TrimSpace(procSelfCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		v1 = true
		dir, opts := parts[1], parts[1]
		if name, ok := strings.CutPrefix(parts[1], "name="); ok {
			dir, opts = name, "none,"+parts[1]
		}
		mounts = append(mounts, fmt.Sprintf("mkdir -p /sys/fs/cgroup/%[1]s; mount -t cgroup -o %[2]s cgroup /sys/fs/cgroup/%[1]s", dir, opts))
	}
	if v1 {
		mounts = append([]string{"mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup"}, mounts...)
		mounts = append(mounts, "mkdir -p /sys/fs/cgroup/unified; mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified || true")
	} else {
		mounts = []string{"mount -t cgroup2 cgroup2 /sys/fs/cgroup"}
	}
	return "if [ -z \"$(ls -A /sys/fs/cgroup)\" ]; then\n" + strings.Join(mounts, "\n") + "\nfi\n"
}
