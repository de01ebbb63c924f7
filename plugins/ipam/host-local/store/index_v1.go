package store

import (
	"errors"
	"io/fs"
	"net"
	"strings"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// The index of the previous release: one file per attachment, named by its
// whole key, under <dataDir>/.host-local-index/<network>/, with a stamp of
// the same format as ours. This release never looks up a lease in it. It
// lives in another directory than ours, so neither release ever reads the
// other's stamp as its own. This release removes it when it builds its own
// index, so that a rollback finds no stamp there and rebuilds; until then,
// the boot release (boot.go) reads it to know what that release had
// leased before the reboot.
const v1IndexRootName = ".host-local-index"

// removeV1Index removes the index of the previous release, its stamp first:
// a crash half-way leaves that release, after a rollback, an unstamped
// index that it rebuilds, never a stamped one with files missing.
func (s *Store) removeV1Index() error {
	const what = "removing the lease index of the previous release"
	root, v1, err := s.openV1Index()
	if err != nil || v1 == nil {
		return err
	}
	defer root.Close()
	err = errors.Join(v1.Remove(stampName), v1.Close())
	if err != nil {
		return ioErr(what, err)
	}
	s.point("v1-stamp-removed")
	if err := root.RemoveAll(s.network); err != nil {
		return ioErr(what, err)
	}
	// The root goes with its last network; while other networks still have
	// theirs, rmdir(2) fails with ENOTEMPTY, which is expected.
	_ = s.root.RemoveDir(v1IndexRootName)
	return nil
}

// openV1Index opens <dataDir>/.host-local-index and its directory of the
// network; both are nil when the latter is missing.
func (s *Store) openV1Index() (root, v1 *statedir.Dir, err error) {
	if ok, err := s.openNet(false); !ok || err != nil {
		return nil, nil, err
	}
	root, err = s.root.Sub(v1IndexRootName, false, 0)
	if err == nil {
		v1, err = root.Sub(s.network, false, 0)
		if err != nil {
			_ = root.Close() // only read
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, ioErr("opening the lease index of the previous release", err)
	}
	return root, v1, nil
}

// v1Stamped reports whether the previous release's stamp matches the
// network directory: nothing changed the directory since its last commit.
func (s *Store) v1Stamped() (bool, error) {
	root, v1, err := s.openV1Index()
	if err != nil || v1 == nil {
		return false, err
	}
	defer func() { _ = errors.Join(v1.Close(), root.Close()) }()
	return stampMatches(s.net, v1)
}

// v1IndexEntries reads every lease the previous release's index lists.
func (s *Store) v1IndexEntries() ([]leaseEntry, error) {
	const what = "reading the lease index of the previous release"
	root, v1, err := s.openV1Index()
	if err != nil || v1 == nil {
		return nil, err
	}
	defer func() { _ = errors.Join(v1.Close(), root.Close()) }()
	return eachIndexFile(v1, what, func(name string) ([]leaseEntry, error) {
		data, err := v1.ReadFile(name)
		if err != nil {
			return nil, ioErr(what, err)
		}
		owner, ips := parseV1IndexFile(data)
		out := make([]leaseEntry, 0, len(ips))
		for _, ip := range ips {
			out = append(out, leaseEntry{ip: ip, owner: owner})
		}
		return out, nil
	})
}

// parseV1IndexFile reads a file of the previous index: the attachment on
// its first two lines, then one address a line. A file too short to name
// its attachment lists nothing.
func parseV1IndexFile(data []byte) (owner types.Attachment, ips []net.IP) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return types.Attachment{}, nil
	}
	for _, l := range lines[2:] {
		if ip := net.ParseIP(l); ip != nil {
			ips = append(ips, ip)
		}
	}
	return types.Attachment{ContainerID: lines[0], IfName: lines[1]}, ips
}
