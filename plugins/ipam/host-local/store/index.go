package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// stampLag puts the instant stamped on the network directory in the past,
// so that any later change of it, which the kernel stamps with the current
// time, gives it another time even on file systems with coarse timestamps.
const stampLag = 5 * time.Second

// openIndex opens the network's index directory, creating it (and the
// index root) when create is set; while it is missing, s.index stays nil.
func (s *Store) openIndex(create bool) error {
	if s.index != nil {
		return nil
	}
	root, err := s.root.Sub(indexRootName, create, 0o700)
	if err == nil {
		s.index, err = root.Sub(s.network, create, 0o700)
		err = errors.Join(err, root.Close())
	}
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil
	}
	if err != nil {
		return ioErr("opening lease index", err)
	}
	return nil
}

// readBucket returns every lease a bucket lists; a missing bucket lists none.
func (s *Store) readBucket(name string) ([]leaseEntry, error) {
	text, err := s.readBucketText(name)
	return parseBucket([]byte(text)), err
}

func (s *Store) readBucketText(name string) (string, error) {
	if s.noIndex {
		return "", nil
	}
	if err := s.openIndex(false); err != nil {
		return "", err
	}
	data, err := readOptional(s.index, name)
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
	if s.noIndex {
		return nil
	}
	var err error
	if text == "" {
		err = s.index.Remove(name)
	} else if err = exchange(s.index, spareName, name, []byte(text)); err == nil {
		err = s.index.Truncate(spareName, 0)
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

// indexGet returns the addresses the index lists for a (unconfirmed);
// without an index, those of a's lease files.
func (s *Store) indexGet(a types.Attachment) ([]net.IP, error) {
	if s.noIndex {
		return s.scanFor(a)
	}
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
	ok, err := s.indexStamped()
	if errors.Is(err, statedir.ErrLink) && s.releaseOnly {
		ok, err = false, nil // rebuilt below, which falls back to the lease files
	}
	if ok || err != nil {
		return err
	}
	leases, err := s.scan()
	if err != nil {
		return err
	}
	err = s.rebuild(leases)
	if unwritable(err) || s.releaseOnly && errors.Is(err, statedir.ErrLink) {
		// The index is a cache of the lease files. Where it cannot be
		// written, lookups read the lease files instead, so that a DEL
		// with nothing to release, or only unlinks to do, still succeeds
		// on a full or read-only disk. Every lease change moves the
		// directory's time, so the stale stamp stays stale.
		s.noIndex, s.dirty = true, false
		return nil
	}
	return err
}

// indexStamped reports whether the index's stamp matches the modification
// time of the network directory, i.e. nothing changed it since our last
// commit.
func (s *Store) indexStamped() (bool, error) {
	if err := s.openIndex(false); err != nil {
		return false, err
	}
	return stampMatches(s.net, s.index)
}

// stampMatches reports whether the stamp file of the index directory idx
// holds the modification time of the network directory; a missing stamp
// (or index) matches nothing.
func stampMatches(net, idx *statedir.Dir) (bool, error) {
	mtime, err := net.ModTime()
	if err != nil {
		return false, ioErr("checking lease directory", err)
	}
	data, err := readOptional(idx, stampName)
	if err != nil {
		return false, ioErr("reading lease index stamp", err)
	}
	return data != nil && string(data) == stampText(mtime), nil
}

// begin invalidates the stamp before the first change, so that a crash
// before Commit leaves the index unstamped, hence rebuilt by the next Lock.
func (s *Store) begin() error {
	if s.dirty || s.noIndex {
		return nil
	}
	// No index yet: the boot release changes leases before the first
	// rebuild (Lock).
	err := s.openIndex(true)
	if err == nil {
		err = s.index.Overwrite(stampName, []byte(invalidStamp))
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
	out := make([]leaseEntry, 0, len(names))
	for _, name := range names {
		data, err := s.net.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, ioErr("reading lease", err)
		}
		out = append(out, leaseEntry{ip: net.ParseIP(name), owner: parseLease(data)})
	}
	return out, nil
}

// rebuild writes a new index from leases and stamps it fresh, at most one
// file per bucket.
func (s *Store) rebuild(leases []leaseEntry) error {
	s.dirty = true
	if err := s.removeIndex(); err != nil {
		return err
	}
	if err := s.openIndex(true); err != nil {
		return err
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
		if err := s.index.CreateNew(name, bucketContent(entries)); err != nil {
			return ioErr("writing lease index", err)
		}
	}
	s.point("index-rebuilt")
	return s.stamp()
}

// removeIndex removes the network's index directory, never following a
// link: one planted in its place is refused (statedir.ErrLink).
func (s *Store) removeIndex() error {
	if err := s.index.Close(); err != nil {
		return ioErr("closing lease index", err)
	}
	s.index = nil
	root, err := s.root.Sub(indexRootName, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = errors.Join(root.RemoveAll(s.network), root.Close())
	}
	if err != nil {
		return ioErr("removing stale lease index", err)
	}
	return nil
}

// stamp sets the modification time of the network directory to an instant
// in the past and writes that time, as the file system keeps it, into the
// index's stamp file: the index matches the lease files while the two agree.
func (s *Store) stamp() error {
	t := time.Now().Add(-stampLag)
	if err := s.net.SetTimes(t); err != nil {
		return ioErr("stamping lease directory", err)
	}
	s.point("dir-stamped")
	mtime, err := s.net.ModTime()
	if err != nil {
		return ioErr("stamping lease directory", err)
	}
	if err := s.index.Overwrite(stampName, []byte(stampText(mtime))); err != nil {
		return ioErr("stamping lease index", err)
	}
	s.point("index-stamped")
	s.dirty = false
	return nil
}

// unwritable reports whether err means that the index cannot be written:
// the disk is full, over quota, read-only or not ours to write.
func unwritable(err error) bool {
	for _, e := range []error{unix.ENOSPC, unix.EDQUOT, unix.EROFS, unix.EACCES, unix.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// scanFor reads every lease file and returns the addresses leased to a.
func (s *Store) scanFor(a types.Attachment) ([]net.IP, error) {
	leases, err := s.scan()
	var out []net.IP
	for _, l := range leases {
		if l.owner == a {
			out = append(out, l.ip)
		}
	}
	return out, err
}
