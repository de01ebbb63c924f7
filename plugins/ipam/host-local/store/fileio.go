package store

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// writeNew writes content to a new file of mode 0600 at path. A file left
// there by a crashed run is removed first rather than truncated: it may be a
// hard link to a lease.
func writeNew(path string, content []byte) error {
	if err := removeIfExists(path); err != nil {
		return err
	}
	return createNew(path, content)
}

// createNew writes content to a file of mode 0600 at path, which must not
// exist; a failed write removes the file again.
func createNew(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, removeIfExists(path))
	}
	return nil
}

// overwrite writes content over the start of path, creating it (0600) when
// missing, and cuts what is left beyond. It is not atomic: callers use it
// only where a torn write is detected (the index and its stamp) or cannot
// be seen (the spare file of exchange).
func overwrite(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(content, 0)
	if err == nil {
		err = f.Truncate(int64(len(content)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// exchange atomically replaces path by content without creating or freeing
// an inode in the common case: content goes into the spare file, which then
// swaps places with path (renameat2 RENAME_EXCHANGE) and keeps the old
// content as the next spare. Where path does not exist yet, or the file
// system cannot exchange, a plain rename(2) replaces it, still atomically.
func exchange(spare, path string, content []byte) error {
	if err := overwrite(spare, content); err != nil {
		return err
	}
	err := unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) {
		return err
	}
	return os.Rename(spare, path)
}

// removeIfExists removes path; an absent file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
