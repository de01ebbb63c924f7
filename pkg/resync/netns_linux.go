package resync

import "golang.org/x/sys/unix"

// netnsExists reports whether the attachment's netns path still names a
// network namespace; an attachment recorded without one counts as live.
// Equivalent to: stat -f -c %T $path = nsfs
func netnsExists(path string) bool {
	if path == "" {
		return true
	}
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}
