package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cnisuite/pkg/types"
)

// stampLag puts the instant stamped on the network directory in the past,
// so that any later change of it, which the kernel stamps with the current
// time, gives it another time even on file systems with coarse timestamps.
const stampLag = 5 * time.Second

func (s *Store) indexPathOf(name string) string { return filepath.Join(s.indexDir, name) }

// indexKey names the index file of an attachment; container IDs and
// interface names are not trusted as file names.
func indexKey(a types.Attachment) string {
	sum := sha256.Sum256([]byte(a.ContainerID + "\x00" + a.IfName))
	return hex.EncodeToString(sum[:16])
}

// indexGet returns the addresses the index lists for a (unconfirmed).
func (s *Store) indexGet(a types.Attachment) ([]net.IP, error) {
	data, err := os.ReadFile(s.indexPathOf(indexKey(a)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioErr("reading lease index", err)
	}
	owner, ips, ok := parseIndexFile(data)
	if !ok || owner != a {
		return nil, nil
	}
	return ips, nil
}

// parseIndexFile reads an index file: the attachment on its first two
// lines, then one address a line (the inverse of indexContent); ok is false
// for a file too short to name its attachment.
func parseIndexFile(data []byte) (owner types.Attachment, ips []net.IP, ok bool) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return types.Attachment{}, nil, false
	}
	for _, l := range lines[2:] {
		if ip := net.ParseIP(l); ip != nil {
			ips = append(ips, ip)
		}
	}
	return types.Attachment{ContainerID: lines[0], IfName: lines[1]}, ips, true
}

// indexAdd appends ip to the index file of a, creating it when missing.
// Index files are written in place: a crash half-way leaves the stamp
// invalid (begin), so a torn index file is never trusted.
func (s *Store) indexAdd(a types.Attachment, ip net.IP) error {
	f, err := os.OpenFile(s.indexPathOf(indexKey(a)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return ioErr("updating lease index", err)
	}
	fi, err := f.Stat()
	if err == nil {
		line := ip.String() + "\n"
		if fi.Size() == 0 {
			line = a.ContainerID + "\n" + a.IfName + "\n" + line
		}
		_, err = f.WriteString(line)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ioErr("updating lease index", err)
	}
	s.point("index-updated")
	return nil
}

// indexRemove drops ip from the index file of a, removing the file when it
// lists nothing else.
func (s *Store) indexRemove(a types.Attachment, ip net.IP) error {
	ips, err := s.indexGet(a)
	if err != nil {
		return err
	}
	var keep []net.IP
	for _, x := range ips {
		if !x.Equal(ip) {
			keep = append(keep, x)
		}
	}
	path := s.indexPathOf(indexKey(a))
	if len(keep) == 0 {
		err = removeIfExists(path)
	} else {
		err = overwrite(path, indexContent(a, keep))
	}
	if err != nil {
		return ioErr("updating lease index", err)
	}
	s.point("index-updated")
	return nil
}

func indexContent(a types.Attachment, ips []net.IP) []byte {
	var b strings.Builder
	b.WriteString(a.ContainerID + "\n" + a.IfName + "\n")
	for _, ip := range ips {
		b.WriteString(ip.String() + "\n")
	}
	return []byte(b.String())
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
	dirInfo, err := os.Stat(s.dir)
	if err != nil {
		return false, ioErr("checking lease directory", err)
	}
	data, err := os.ReadFile(s.indexPathOf(stampName))
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
	if err := overwrite(s.indexPathOf(stampName), []byte(invalidStamp)); err != nil {
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

// scan reads every lease file.
func (s *Store) scan() ([]leaseEntry, error) {
	names, err := s.leaseNames()
	if err != nil {
		return nil, err
	}
	out := make([]leaseEntry, 0, len(names))
	for _, name := range names {
		ip := net.ParseIP(name)
		owner, ok, err := s.Owner(ip)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, leaseEntry{ip: ip, owner: owner})
		}
	}
	return out, nil
}

// rebuild writes a new index from leases and stamps it fresh.
func (s *Store) rebuild(leases []leaseEntry) error {
	s.dirty = true
	if err := os.RemoveAll(s.indexDir); err != nil {
		return ioErr("removing stale lease index", err)
	}
	if err := os.MkdirAll(s.indexDir, 0o700); err != nil {
		return ioErr("creating lease index", err)
	}
	byOwner := map[types.Attachment][]net.IP{}
	for _, l := range leases {
		if l.owner.ContainerID != "" {
			byOwner[l.owner] = append(byOwner[l.owner], l.ip)
		}
	}
	for a, ips := range byOwner {
		// The directory was just made empty: no stale file to unlink first.
		if err := createNew(s.indexPathOf(indexKey(a)), indexContent(a, ips)); err != nil {
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
