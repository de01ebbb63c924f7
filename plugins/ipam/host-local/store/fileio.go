package store

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// writeNew writes content to a new file of mode 0600 at path. A file left
// there by a crashed run is removed rather than truncated: it may be a hard
// link to a lease. The usual case, no such file, costs no unlink(2).
func writeNew(path string, content []byte) error {
	err := createNew(path, content)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
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

// removeIfExists removes the file path; an absent file is not an error.
// Unlike os.Remove it makes one system call: unlink(2), never rmdir(2).
func removeIfExists(path string) error {
	err := retryEINTR(func() error { return unix.Unlink(path) })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// maxEINTR bounds the retries of a system call interrupted by a signal.
const maxEINTR = 100

// readFile reads the whole file at path. See readFileAt.
func readFile(path string) ([]byte, error) { return readFileAt(unix.AT_FDCWD, path) }

// readFileAt reads the whole file name, relative to the directory open as
// dirfd, with openat, read until end of file and close. os.ReadFile also
// tries to register every file with the poller and stats it (six more
// system calls): a full scan reads every lease, thousands of them.
func readFileAt(dirfd int, name string) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	data, err := readAll(fd)
	// Closing a file only read cannot lose data; a failure changes nothing.
	_ = unix.Close(fd)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// readAll reads fd to its end. Leases and stamps are small: one read holds
// everything and a second finds the end. A file that fills the first read
// (a bucket) is sized with fstat(2), then read in one more call.
func readAll(fd int) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, err
			}
			buf = append(make([]byte, 0, max(int(st.Size)+1, 2*cap(buf))), buf...)
		}
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Read(fd, buf[len(buf):cap(buf)])
			return err
		})
		if err != nil || n == 0 {
			return buf, err
		}
		buf = buf[:len(buf)+n]
	}
}

// retryEINTR calls fn again while a signal interrupts it, at most maxEINTR
// times.
func retryEINTR(fn func() error) error {
	err := fn()
	for i := 0; i < maxEINTR && errors.Is(err, unix.EINTR); i++ {
		err = fn()
	}
	return err
}
