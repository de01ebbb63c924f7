// Package statedir reaches the files of a state directory without ever
// following a symbolic link below it.
//
// The directory a configuration names (a dataDir, /run/cni/tuning) is the
// node operator's choice and is opened as written: a link in that path is
// the operator's own (/var/lib pointing at a data disk). Everything below
// it is ours, and anyone who can write there could plant a link to make a
// root process write, chmod or delete somewhere else. So every name below
// the root is one path component, opened relative to its parent's
// descriptor with O_NOFOLLOW: a link found where a file or directory of
// ours should be is refused with an error naming it (ErrLink), never
// followed, never written or deleted through. Directories are created with
// the mode the caller asks for; one that exists keeps the mode it has.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrLink is the cause of every error about a symbolic link, or anything
// else that is not what the state directory should hold, found below a
// state directory's root.
var ErrLink = errors.New("not a plain file or directory of ours (a symbolic link or special file): refusing to follow or write through it")

// maxEINTR bounds the retries of a system call interrupted by a signal.
const maxEINTR = 100

// Dir is an open directory: the root of a state directory or one below it.
type Dir struct {
	fd   int
	path string // for messages only; never used to reach a file
}

// OpenRoot opens the state directory at path, creating it with mode perm
// (and its missing parents with 0755) when create is set. Links in path are
// followed: the path is the operator's. A missing directory without create
// is fs.ErrNotExist. A directory that exists keeps its mode.
func OpenRoot(path string, create bool, perm os.FileMode) (*Dir, error) {
	if path == "" {
		return nil, errors.New("state directory: empty path")
	}
	fd, err := openDirFollow(path)
	if errors.Is(err, unix.ENOENT) && create {
		if err := makeRoot(path, perm); err != nil {
			return nil, err
		}
		fd, err = openDirFollow(path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

func makeRoot(path string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(path)), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(path, perm)
	if errors.Is(err, fs.ErrExist) {
		return nil // a racing twin made it
	}
	return err
}

func openDirFollow(path string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

// Fd is the directory's descriptor, valid until Close.
func (d *Dir) Fd() int { return d.fd }

// Join names a file of the directory, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, name) }

// Close releases the descriptor.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// checkName refuses a name that is not one path component.
func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &fs.PathError{Op: "open", Path: d.Join(name), Err: errors.New("not a single path component")}
	}
	return nil
}

// pathErr describes err on name. ELOOP, which O_NOFOLLOW gives for a link,
// and ENOTDIR, which O_DIRECTORY gives for a link or a file where a
// directory should be, become ErrLink after a look at what is there.
func (d *Dir) pathErr(op, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENXIO) {
		if kind := d.kindOf(name); kind != "" {
			return &fs.PathError{Op: op, Path: d.Join(name), Err: fmt.Errorf("%s is %s: %w", d.Join(name), kind, ErrLink)}
		}
	}
	return &fs.PathError{Op: op, Path: d.Join(name), Err: err}
}

// kindOf names what is at name when it is neither a regular file nor a
// directory ("a symbolic link to /x"), or returns "".
func (d *Dir) kindOf(name string) string {
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target := make([]byte, 512)
		n, err := unix.Readlinkat(d.fd, name, target)
		if err != nil {
			return "a symbolic link"
		}
		return fmt.Sprintf("a symbolic link to %q", target[:n])
	case unix.S_IFREG, unix.S_IFDIR:
		return "a " + map[bool]string{true: "directory", false: "regular file"}[st.Mode&unix.S_IFMT == unix.S_IFDIR] + " where the other was expected"
	}
	return fmt.Sprintf("a special file (mode %o)", st.Mode&unix.S_IFMT)
}

// Sub opens the directory name below d without following a link, creating
// it with mode perm when missing and create is set. An existing directory
// keeps its mode. A missing one without create is fs.ErrNotExist.
func (d *Dir) Sub(name string, create bool, perm os.FileMode) (*Dir, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := d.openSub(name)
	if errors.Is(err, unix.ENOENT) && create {
		err = retry(func() error { return unix.Mkdirat(d.fd, name, uint32(perm.Perm())) })
		if err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = d.openSub(name)
		}
	}
	if err != nil {
		return nil, d.pathErr("open", name, err)
	}
	return &Dir{fd: fd, path: d.Join(name)}, nil
}

func (d *Dir) openSub(name string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// OpenFile opens the regular file name with flags (O_NOFOLLOW and
// O_CLOEXEC are added; O_NONBLOCK too, so that a planted FIFO cannot hang
// the call) and mode perm when it creates it.
func (d *Dir) OpenFile(name string, flags int, perm os.FileMode) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, d.pathErr("open", name, err)
	}
	if err := requireRegular(fd); err != nil {
		_ = unix.Close(fd) // the open itself is refused; nothing was written
		return nil, d.pathErr("open", name, err)
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// requireRegular refuses a descriptor that is not a regular file (a FIFO,
// a device, a socket planted under one of our names).
func requireRegular(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.ENXIO
	}
	return nil
}

// MaxFileSize bounds what ReadFile reads: 32 MiB, twice the largest
// state file of ours (a record of pkg/records holds at most a 16 MiB
// network configuration and its result), so that no file planted or grown
// below a state directory makes a plugin or cnisuite hold more.
const MaxFileSize = 32 << 20

// ErrTooLarge is the cause of ReadFile's error for a file past its bound.
var ErrTooLarge = errors.New("larger than its size limit")

// ReadFile reads the whole file name, at most MaxFileSize bytes. It makes
// three system calls for a small file (openat, read until the end,
// close): a full scan of a lease directory reads thousands. O_NONBLOCK
// keeps a planted FIFO from hanging the call.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	return d.ReadFileMax(name, MaxFileSize)
}

// ReadFileMax is ReadFile for a file of at most limit bytes: a larger one
// is an error wrapping ErrTooLarge that names it, and costs no more than
// limit bytes of memory.
func (d *Dir) ReadFileMax(name string, limit int64) ([]byte, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, d.pathErr("open", name, err)
	}
	data, err := readAll(fd, limit)
	// Closing a file only read cannot lose data.
	_ = unix.Close(fd)
	if err != nil {
		return nil, d.pathErr("read", name, err)
	}
	return data, nil
}

// ReadAllMax reads f from its offset to its end, at most limit bytes (a
// file opened with OpenFile, or a lock's): a larger one is an error
// wrapping ErrTooLarge that names it.
func ReadAllMax(f *os.File, limit int64) ([]byte, error) {
	data, err := readAll(int(f.Fd()), limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	return data, nil
}

// readAll reads fd to its end with read(2) alone: small files take one
// read and a second that finds the end; a larger one is sized with fstat.
// Past limit bytes it stops with ErrTooLarge, whatever fstat said (a file
// may grow while it is read).
func readAll(fd int, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(512, limit+1))
	for {
		if len(buf) == cap(buf) {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, err
			}
			if st.Size > limit || int64(len(buf)) > limit {
				return nil, fmt.Errorf("%d bytes or more: %w (%d bytes)", max(st.Size, int64(len(buf))), ErrTooLarge, limit)
			}
			size := min(max(st.Size+1, 2*int64(cap(buf))), limit+1)
			buf = append(make([]byte, 0, size), buf...)
		}
		var n int
		err := retry(func() (err error) {
			n, err = unix.Read(fd, buf[len(buf):cap(buf)])
			return err
		})
		if err != nil || n == 0 {
			return buf, err
		}
		buf = buf[:len(buf)+n]
	}
}

// CreateNew writes content to a new regular file name of mode 0600, which
// must not exist (fs.ErrExist); a failed write removes it again.
func (d *Dir) CreateNew(name string, content []byte) error {
	f, err := d.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, d.Remove(name))
	}
	return nil
}

// Overwrite writes content over the start of the regular file name,
// creating it (0600) when missing, and cuts what is left beyond. It is not
// atomic.
func (d *Dir) Overwrite(name string, content []byte) error {
	f, err := d.OpenFile(name, unix.O_WRONLY|unix.O_CREAT, 0o600)
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

// Truncate cuts the regular file name to size.
func (d *Dir) Truncate(name string, size int64) error {
	f, err := d.OpenFile(name, unix.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Remove removes the entry name, a file or a link (the link itself, never
// what it points to), with one unlink(2); an absent name is not an error.
func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	err := retry(func() error { return unix.Unlinkat(d.fd, name, 0) })
	if errors.Is(err, unix.EROFS) {
		// A read-only file system refuses even a name that is not there:
		// removing nothing is success.
		if there, lerr := d.Exists(name); lerr == nil && !there {
			return nil
		}
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// RemoveDir removes the empty directory name; an absent one is not an error.
func (d *Dir) RemoveDir(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	err := retry(func() error { return unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR) })
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// Link makes newName a hard link to the regular file oldName, both in d;
// an existing newName is fs.ErrExist.
func (d *Dir) Link(oldName, newName string) error {
	if err := errors.Join(d.checkName(oldName), d.checkName(newName)); err != nil {
		return err
	}
	err := retry(func() error { return unix.Linkat(d.fd, oldName, d.fd, newName, 0) })
	if err != nil {
		return &os.LinkError{Op: "link", Old: d.Join(oldName), New: d.Join(newName), Err: err}
	}
	return nil
}

// Rename moves oldName over newName, both in d.
func (d *Dir) Rename(oldName, newName string, flags uint) error {
	if err := errors.Join(d.checkName(oldName), d.checkName(newName)); err != nil {
		return err
	}
	err := retry(func() error { return unix.Renameat2(d.fd, oldName, d.fd, newName, flags) })
	if err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(oldName), New: d.Join(newName), Err: err}
	}
	return nil
}

// Lstat describes the entry name without following a link.
func (d *Dir) Lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := d.checkName(name); err != nil {
		return st, err
	}
	err := retry(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return st, &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return st, nil
}

// Stat describes the directory itself.
func (d *Dir) Stat() (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return st, &fs.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return st, nil
}

// ModTime is the directory's modification time.
func (d *Dir) ModTime() (time.Time, error) {
	st, err := d.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(st.Mtim.Unix()), nil
}

// SetTimes sets the directory's access and modification time to t.
func (d *Dir) SetTimes(t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	// futimens(3): utimensat(2) with a NULL path acts on the descriptor.
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(d.fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return &fs.PathError{Op: "chtimes", Path: d.path, Err: errno}
	}
	return nil
}

func retry(fn func() error) error {
	err := fn()
	for i := 0; i < maxEINTR && errors.Is(err, unix.EINTR); i++ {
		err = fn()
	}
	return err
}

// Entry is one name a directory lists, with its type.
type Entry struct {
	Name string
	Type fs.FileMode // fs.ModeDir, fs.ModeSymlink, ...; 0 for a regular file
}

// IsRegular reports whether the entry is a regular file.
func (e Entry) IsRegular() bool { return e.Type&fs.ModeType == 0 }

// List returns the entries of the directory, in no particular order.
func (d *Dir) List() ([]Entry, error) {
	var fd int
	err := retry(func() (err error) {
		// A descriptor of its own: its read offset is not d's.
		fd, err = unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	dirents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(dirents))
	for i, e := range dirents {
		out[i] = Entry{Name: e.Name(), Type: e.Type()}
	}
	return out, nil
}

// Empty reports whether the directory holds no entry besides those ignore
// accepts (nil: none). It reads a few entries at a time and stops at the
// first other one, so that asking costs the same for a directory of
// thousands of entries (the holders of a sysctl, one per pod) as for one of
// a few; List reads them all.
func (d *Dir) Empty(ignore func(name string) bool) (bool, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	defer unix.Close(fd)
	// Room for a few entries, and for one of the longest name (255 bytes).
	buf := make([]byte, 1024)
	for {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Getdents(fd, buf)
			return err
		})
		if err != nil {
			return false, &fs.PathError{Op: "getdents", Path: d.path, Err: err}
		}
		if n <= 0 {
			return true, nil
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil) // leaves out . and ..
		for _, name := range names {
			if ignore == nil || !ignore(name) {
				return false, nil
			}
		}
	}
}

// RemoveAll removes the directory name and everything below it without
// following a link: a link inside is removed itself, and name being a
// link (or a file) is refused with ErrLink. An absent name is not an
// error.
func (d *Dir) RemoveAll(name string) error {
	return d.removeAll(name, 0)
}

// maxDepth bounds how deep RemoveAll descends.
const maxDepth = 16

func (d *Dir) removeAll(name string, depth int) error {
	sub, err := d.Sub(name, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := sub.List()
	for _, e := range entries {
		if err != nil {
			break
		}
		if e.Type&fs.ModeDir != 0 && depth < maxDepth {
			err = sub.removeAll(e.Name, depth+1)
		} else {
			err = sub.Remove(e.Name)
		}
	}
	err = errors.Join(err, sub.Close())
	if err != nil {
		return err
	}
	return d.RemoveDir(name)
}

// Exists reports whether the entry name exists (a link counts, unfollowed).
func (d *Dir) Exists(name string) (bool, error) {
	_, err := d.Lstat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}
