package store

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/statedir"
)

// Every file of the store is reached relative to a directory opened
// without following links (pkg/statedir): a link planted in the data
// directory is refused, never written or deleted through.

// writeNew writes content to a new file of mode 0600 named name in d. A
// file left there by a crashed run is removed rather than truncated: it may
// be a hard link to a lease. The usual case, no such file, costs no
// unlink(2).
func writeNew(d *statedir.Dir, name string, content []byte) error {
	err := d.CreateNew(name, content)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := d.Remove(name); err != nil {
		return err
	}
	return d.CreateNew(name, content)
}

// exchange atomically replaces name in d by content without creating or
// freeing an inode in the common case: content goes into the spare file,
// which then swaps places with name (renameat2 RENAME_EXCHANGE) and keeps
// the old content as the next spare. Where name does not exist yet, or the
// file system cannot exchange, a plain rename(2) replaces it, still
// atomically.
func exchange(d *statedir.Dir, spare, name string, content []byte) error {
	if err := d.Overwrite(spare, content); err != nil {
		return err
	}
	err := d.Rename(spare, name, unix.RENAME_EXCHANGE)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) {
		return err
	}
	return d.Rename(spare, name, 0)
}

// readOptional reads name in d; a missing file (or directory) is nil data
// and no error.
func readOptional(d *statedir.Dir, name string) ([]byte, error) {
	if d == nil {
		return nil, nil
	}
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
