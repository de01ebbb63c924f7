package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

// stampLag puts the instant stamped on the network directory in the past,
// so that any later change of it, which the kernel stamps with the current
// time, gives it another time even on file systems with coarse timestamps.
const stampLag = 5 * time.Second

func (s *Store) indexPathOf(name string) string { return filepath.Join(s.indexDir, name) }

// readBucket returns every lease a bucket lists; a missing bucket lists none.
func (s *Store) readBucket(name string) ([]leaseEntry, error) {
	text, err := s.readBucketText(name)
	return parseBucket([]byte(text)), err
}

func (s *Store) readBucketText(name string) (string, error) {
	data, err := readFile(s.indexPathOf(name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", ioErr("reading lease index", err)
	}
	return string(data), nil
}

// writeBucket replaces a bucket atomically, so that a bucket on disk is
// always one that some call wrote whole; whether it matches the lease files
// is the stamp's business. The content goes into the index's one spare
// file, which then swaps places with the bucket (exchange) and is emptied,
// so that no copy of what the bucket listed before stays behind. A bucket
// left with nothing to list is removed.
func (s *Store) writeBucket(name, text string) error {
	path, spare := s.indexPathOf(name), s.indexPathOf(spareName)
	var err error
	if text == "" {
		err = removeIfExists(path)
	} else if err = exchange(spare, path, []byte(text)); err == nil {
		err = unix.Truncate(spare, 0)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil // the bucket was new: rename(2) used the spare up
		}
	}
	if err != nil {
		return ioErr("updating lease index", err)
	}
	s.point("index-updated")
	return nil
}

// indexGet returns the addresses the index lists for a (unconfirmed).
func (s *Store) indexGet(a types.Attachment) ([]net.IP, error) {
	text, err := s.readBucketText(bucketOf(a))
	if err != nil {
		return nil, err
	}
	return bucketAddresses(text, a), nil
}

// indexAdd lists ip under a in its bucket.
func (s *Store) indexAdd(a types.Attachment, ip net.IP) error {
	name := bucketOf(a)
	text, err := s.readBucketText(name)
	if err != nil {
		return err
	}
	return s.writeBucket(name, text+bucketLine(leaseEntry{ip: ip, owner: a}))
}

// indexRemove drops ip under a from its bucket.
func (s *Store) indexRemove(a types.Attachment, ip net.IP) error {
	name := bucketOf(a)
	text, err := s.readBucketText(name)
	if err != nil {
		return err
	}
	kept, found := bucketWithout(text, bucketLine(leaseEntry{ip: ip, owner: a}))
	if !found {
		return nil
	}
	return s.writeBucket(name, kept)
}

// stampText is the fixed-width text of a stamp; writing it in place never
// allocates or frees a block. invalidStamp matches no directory time.
func stampText(t time.Time) string { return fmt.Sprintf("%020d", t.UnixNano()) }

const invalidStamp = "--------------------"

// ensureIndex rebuilds the index unless its stamp matches the modification
// time of the network directory.
func (s *Store) ensureIndex() error {
	if ok, err := s.indexStamped(); ok || err != nil {
		return err
	}
	leases, err := s.scan()
	if err != nil {
		return err
	}
	return s.rebuild(leases)
}

// indexStamped reports whether the index's stamp matches the modification
// time of the network directory, i.e. nothing changed it since our last
// commit.
func (s *Store) indexStamped() (bool, error) {
	return stampMatches(s.dir, s.indexPathOf(stampName))
}

// stampMatches reports whether the stamp file holds the modification time
// of dir; a missing stamp matches nothing.
func stampMatches(dir, stamp string) (bool, error) {
	dirInfo, err := os.Stat(dir)
	if err != nil {
		return false, ioErr("checking lease directory", err)
	}
	data, err := readFile(stamp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, ioErr("reading lease index stamp", err)
	}
	return err == nil && string(data) == stampText(dirInfo.ModTime()), nil
}

// begin invalidates the stamp before the first change, so that a crash
// before Commit leaves the index unstamped, hence rebuilt by the next Lock.
func (s *Store) begin() error {
	if s.dirty {
		return nil
	}
	err := overwrite(s.indexPathOf(stampName), []byte(invalidStamp))
	if errors.Is(err, fs.ErrNotExist) {
		// No index yet: the boot release changes leases before the first
		// rebuild (Lock).
		err = os.MkdirAll(s.indexDir, 0o700)
	}
	if err != nil {
		return ioErr("invalidating lease index", err)
	}
	s.dirty = true
	s.point("stamp-removed")
	return nil
}

// leaseEntry is one lease file.
type leaseEntry struct {
	ip    net.IP
	owner types.Attachment
}

// scan reads every lease file, each opened relative to the network
// directory (readFileAt): on the first call after an upgrade or after the
// reference plugin wrote, this is most of the time spent.
func (s *Store) scan() ([]leaseEntry, error) {
	names, err := s.leaseNames()
	if err != nil || len(names) == 0 {
		return nil, err
	}
	dirfd, err := unix.Open(s.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioErr("listing leases", &fs.PathError{Op: "open", Path: s.dir, Err: err})
	}
	// Closing a directory only read cannot fail in a way that matters.
	defer func() { _ = unix.Close(dirfd) }()
	out := make([]leaseEntry, 0, len(names))
	for _, name := range names {
		data, err := readFileAt(dirfd, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, ioErr("reading lease in "+s.dir, err)
		}
		out = append(out, leaseEntry{ip: net.ParseIP(name), owner: parseLease(data)})
	}
	return out, nil
}

// rebuild writes a new index from leases and stamps it fresh. It removes
// the index of the previous format first (index_v1.go), and writes at most
// one file per bucket.
func (s *Store) rebuild(leases []leaseEntry) error {
	s.dirty = true
	if err := s.removeV1Index(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.indexDir); err != nil {
		return ioErr("removing stale lease index", err)
	}
	if err := os.MkdirAll(s.indexDir, 0o700); err != nil {
		return ioErr("creating lease index", err)
	}
	buckets := map[string][]leaseEntry{}
	for _, l := range leases {
		if l.owner.ContainerID != "" {
			name := bucketOf(l.owner)
			buckets[name] = append(buckets[name], l)
		}
	}
	for name, entries := range buckets {
		// The directory was just made empty: no stale file to unlink first.
		if err := createNew(s.indexPathOf(name), bucketContent(entries)); err != nil {
			return ioErr("writing lease index", err)
		}
	}
	s.point("index-rebuilt")
	return s.stamp()
}

// stamp sets the modification time of the network directory to an instant
// in the past and writes that time, as the file system keeps it, into the
// index's stamp file: the index matches the lease files while the two agree.
func (s *Store) stamp() error {
	t := time.Now().Add(-stampLag)
	if err := os.Chtimes(s.dir, t, t); err != nil {
		return ioErr("stamping lease directory", err)
	}
	s.point("dir-stamped")
	fi, err := os.Stat(s.dir)
	if err != nil {
		return ioErr("stamping lease directory", err)
	}
	if err := overwrite(s.indexPathOf(stampName), []byte(stampText(fi.ModTime()))); err != nil {
		return ioErr("stamping lease index", err)
	}
	s.point("index-stamped")
	s.dirty = false
	return nil
}
