package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"

	"cnisuite/pkg/statedir"
)

// Leases after a reboot. Network namespaces never survive a reboot, so a
// lease taken in an earlier boot can belong to no living container; left
// alone, such leases exhaust the range after enough unclean reboots, and a
// container re-created after a reboot with the same ID is refused as a
// duplicate. The store therefore forgets them on its first locked call of
// each boot.
//
// Boots are told apart by the kernel's boot ID (a random UUID drawn at
// every boot, /proc/sys/kernel/random/boot_id), recorded per network in
// <dataDir>/.host-local-boot/<network> by the first call of each boot. No
// clock is involved, so a machine that boots at 1970 and then steps its
// clock forward loses nothing. Which leases predate the boot:
//   - when the index is still stamped, nobody touched the directory since
//     our last call, which the record places in an earlier boot: every
//     lease does;
//   - otherwise (the reference plugin or an operator changed the directory
//     since, possibly in this boot), exactly the leases our index listed at
//     its last commit and that still name the same attachment. A lease the
//     reference wrote after our last call is kept: it may be from this boot.
//
// Without a record (the first call of this version, or a dataDir on a tmpfs
// that a reboot emptied anyway), the boot is recorded and nothing released.

const bootRootName = ".host-local-boot"

// bootIDPath is where the kernel publishes the boot ID.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// currentBoot reads the boot ID, or returns "" when the kernel does not tell
// (then nothing is ever released for a reboot).
func currentBoot() string {
	data, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(data))
}

// forgetEarlierBoots releases the leases of earlier boots on the first
// locked call of a boot and records the boot; later calls read one file.
func (s *Store) forgetEarlierBoots() error {
	boot := s.boot
	if boot == "" {
		return nil
	}
	recorded, err := s.readBootRecord()
	switch {
	case err != nil && s.releaseOnly && errors.Is(err, statedir.ErrLink):
		// A link planted for the record: refused, and a DEL goes on
		// without the reboot release (the next ADD names the link).
		return nil
	case err != nil:
		return ioErr("reading the boot record", err)
	case string(recorded) == boot:
		return nil
	case recorded != nil:
		if err := s.releaseEarlierBoots(); err != nil {
			return err
		}
	}
	// A record that cannot be written (a read-only dataDir) must not fail
	// the call, a DEL above all: the next call records the boot instead.
	_ = s.recordBoot(boot)
	return nil
}

// readBootRecord reads <dataDir>/.host-local-boot/<network>: nil when
// there is none.
func (s *Store) readBootRecord() ([]byte, error) {
	dir, err := s.root.Sub(bootRootName, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return readOptional(dir, s.network)
}

func (s *Store) recordBoot(boot string) error {
	dir, err := s.root.Sub(bootRootName, true, 0o700)
	if err == nil {
		err = errors.Join(dir.Overwrite(s.network, []byte(boot)), dir.Close())
	}
	if err != nil {
		return ioErr("recording the boot", err)
	}
	s.point("boot-recorded")
	return nil
}

// releaseEarlierBoots releases the leases that predate this boot (see the
// comment at the top of this file).
func (s *Store) releaseEarlierBoots() error {
	stale, err := s.earlierBootLeases()
	if err != nil {
		return err
	}
	for _, l := range stale {
		if err := s.Release(l.ip); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) earlierBootLeases() ([]leaseEntry, error) {
	stamped, err := s.indexStamped()
	if err != nil {
		return nil, err
	}
	if stamped {
		return s.scan()
	}
	listed, err := s.indexEntries()
	if err != nil {
		return nil, err
	}
	var out []leaseEntry
	for _, l := range listed {
		owner, ok, err := s.Owner(l.ip)
		if err != nil {
			return nil, err
		}
		if ok && owner == l.owner {
			out = append(out, l)
		}
	}
	return out, nil
}

// indexEntries reads every lease the buckets list.
func (s *Store) indexEntries() ([]leaseEntry, error) {
	if err := s.openIndex(false); err != nil {
		return nil, err
	}
	return eachIndexFile(s.index, "reading lease index", s.readBucket)
}

// eachIndexFile returns the leases read, through read, from every file of
// the index directory dir but its dot files (the stamp, the spare); a
// missing directory lists none.
func eachIndexFile(dir *statedir.Dir, what string, read func(name string) ([]leaseEntry, error)) ([]leaseEntry, error) {
	if dir == nil {
		return nil, nil
	}
	entries, err := dir.List()
	if err != nil {
		return nil, ioErr(what, err)
	}
	var out []leaseEntry
	for _, e := range entries {
		if strings.HasPrefix(e.Name, ".") {
			continue
		}
		listed, err := read(e.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, listed...)
	}
	return out, nil
}
