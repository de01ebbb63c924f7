package store

import (
	"errors"
	"io/fs"
	"os"
)

// writeNew writes content to a new file of mode 0600 at path. A file left
// there by a crashed run is removed first rather than truncated: it may be a
// hard link to a lease.
func writeNew(path string, content []byte) error {
	if err := removeIfExists(path); err != nil {
		return err
	}
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

// replaceFile writes content to path atomically, through tmp and rename(2).
func replaceFile(tmp, path string, content []byte) error {
	if err := writeNew(tmp, content); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// removeIfExists removes path; an absent file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
