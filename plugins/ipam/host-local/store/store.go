// Package store keeps host-local leases on disk in the reference plugin's
// format, so that either binary can run on a node after the other:
//
//	<dataDir>/<network>/<ip>                  "<containerID>\r\n<ifname>" (legacy: "<containerID>")
//	<dataDir>/<network>/last_reserved_ip.<n>  last address reserved in range set n
//	<dataDir>/<network>/lock                  flock(2)ed around every change
//
// The lease files are the only source of truth. To find the leases of one
// attachment without reading every lease file, the store keeps an index
// under <dataDir>/.host-local-index2/<network>/: 64 bucket files, each
// listing the leases of the attachments whose hash falls in it (bucket.go).
// The index is trusted only while its stamp file holds the modification
// time of the network directory. A change invalidates the stamp first; its
// commit sets the directory's time to an instant in the past and writes that
// instant into the stamp. Any other change of the network directory — by the
// reference plugin or an operator — gives the directory the current time,
// and a crash half-way leaves the stamp invalid: either way the next Lock
// rebuilds the index from the lease files.
package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// File names inside the network directory.
const (
	lockName           = "lock"
	lastReservedPrefix = "last_reserved_ip."
	leaseTmpName       = ".lease.tmp"
	spareSuffix        = ".swap" // last_reserved_ip.<n>.swap: spare for exchange
	indexRootName      = ".host-local-index2"
	stampName          = ".stamp"
	spareName          = ".spare" // spare of exchange for the buckets
)

// Store is the lease directory of one network. Every method but Open,
// Exists, Count, Taken, LastReserved and Close needs the lock (Lock).
type Store struct {
	dataDir string
	network string
	root    *statedir.Dir // dataDir; nil until first used
	net     *statedir.Dir // <dataDir>/<network>
	index   *statedir.Dir // <dataDir>/.host-local-index2/<network>, nil while missing
	lock    *os.File
	dirty   bool // changed since the last stamp
	broken  bool // a change failed half-way: leave the index stale
	noIndex bool // the index cannot be written (a full or read-only disk): work from the lease files
	// releaseOnly (SetReleaseOnly) lets a DEL work from the lease files
	// when a link was planted where the index lives: the link is refused,
	// never followed, and the teardown still ends.
	releaseOnly bool
	boot        string // the current boot ID, "" when unknown (boot.go)

	// crash, when set (tests only), is called after every write, to let a
	// test stop the process between any two writes.
	crash func(point string)
}

// Open returns the store of network under dataDir. It validates the network
// name, which becomes a path, and touches nothing on disk.
func Open(dataDir, network string) (*Store, error) {
	if err := types.ValidateNetworkName(network); err != nil {
		return nil, err
	}
	if dataDir == "" {
		return nil, types.Errorf(types.ErrInvalidConfig, "ipam.dataDir: empty path")
	}
	return &Store{dataDir: dataDir, network: network, boot: currentBoot()}, nil
}

// SetReleaseOnly says that the caller only releases leases (DEL): see
// releaseOnly.
func (s *Store) SetReleaseOnly() { s.releaseOnly = true }

// Dir returns the network directory's path.
func (s *Store) Dir() string { return filepath.Join(s.dataDir, s.network) }

// openNet opens the data directory and the network directory, creating
// them when create is set; ok is false when one is missing (and not made).
func (s *Store) openNet(create bool) (ok bool, err error) {
	if s.net != nil {
		return true, nil
	}
	if s.root == nil {
		s.root, err = statedir.OpenRoot(s.dataDir, create, 0o755)
		if errors.Is(err, fs.ErrNotExist) && !create {
			return false, nil
		}
		if err != nil {
			return false, ioErr("opening data directory", fmt.Errorf("%w%s", err, unprivilegedHint(err)))
		}
	}
	s.net, err = s.root.Sub(s.network, create, 0o755)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return false, nil
	}
	if err != nil {
		return false, ioErr("opening lease directory", fmt.Errorf("%w%s", err, unprivilegedHint(err)))
	}
	return true, nil
}

// unprivilegedHint says what to do when a directory could not be made or
// opened for want of privileges the plugin lacks (a rootless runtime).
func unprivilegedHint(err error) string {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		return rootless.Hint("ipam.dataDir")
	}
	return ""
}

// Close releases the directories the store opened; Unlock calls it.
func (s *Store) Close() error {
	err := errors.Join(s.index.Close(), s.net.Close(), s.root.Close())
	s.index, s.net, s.root = nil, nil, nil
	return err
}

// Exists reports whether the network directory exists.
func (s *Store) Exists() (bool, error) {
	return s.openNet(false)
}

// markBroken notes a failed change, after which the index is not stamped.
func (s *Store) markBroken(err *error) {
	if *err != nil {
		s.broken = true
	}
}

func (s *Store) point(name string) {
	if s.crash != nil {
		s.crash(name)
	}
}

// leaseName is the file name of the lease of ip, as the reference writes it.
func leaseName(ip net.IP) string { return ip.String() }

// Reserve leases ip to a and records ip as the last address reserved in
// range set set. It returns false when ip is already leased. A failure
// after the lease file was written removes it again.
func (s *Store) Reserve(a types.Attachment, ip net.IP, set int) (ok bool, err error) {
	defer s.markBroken(&err)
	if strings.ContainsAny(a.ContainerID+a.IfName, "\r\n") || a.ContainerID == "" {
		return false, types.Errorf(types.ErrInvalidEnv, "container ID %q / interface %q: not usable in a lease", a.ContainerID, a.IfName)
	}
	if err := s.begin(); err != nil {
		return false, err
	}
	ok, err = s.createLease(ip, []byte(a.ContainerID+"\r\n"+a.IfName))
	if err != nil || !ok {
		return false, err
	}
	err = s.indexAdd(a, ip)
	if err == nil {
		err = s.writeLastReserved(set, ip)
	}
	if err != nil {
		return false, errors.Join(err, s.Release(ip))
	}
	return true, nil
}

// createLease writes the lease file of ip atomically: the content goes to a
// temporary file first, which is then hard-linked under the address's name.
// link(2) fails when the name exists, so two writers never share an address,
// and a crash leaves either no lease or a complete one.
func (s *Store) createLease(ip net.IP, content []byte) (bool, error) {
	if err := writeNew(s.net, leaseTmpName, content); err != nil {
		return false, ioErr("writing lease", err)
	}
	s.point("lease-tmp-written")
	linkErr := s.net.Link(leaseTmpName, leaseName(ip))
	if linkErr == nil {
		s.point("lease-linked")
	}
	if err := s.net.Remove(leaseTmpName); err != nil {
		return false, errors.Join(ioErr("removing temporary lease", err), s.removeLease(ip, linkErr))
	}
	s.point("lease-tmp-removed")
	switch {
	case errors.Is(linkErr, fs.ErrExist):
		return false, nil
	case linkErr != nil:
		return false, ioErr("creating lease", linkErr)
	}
	return true, nil
}

func (s *Store) removeLease(ip net.IP, linkErr error) error {
	if linkErr != nil {
		return nil
	}
	return s.net.Remove(leaseName(ip))
}

// Release removes the lease of ip; an absent lease is not an error.
func (s *Store) Release(ip net.IP) (err error) {
	defer s.markBroken(&err)
	owner, ok, err := s.Owner(ip)
	if err != nil || !ok {
		return err
	}
	if err := s.releaseLease(owner, ip); err != nil {
		return releaseErr(ip, owner, s.Dir(), err)
	}
	return nil
}

func (s *Store) releaseLease(owner types.Attachment, ip net.IP) error {
	if err := s.begin(); err != nil {
		return err
	}
	if err := s.net.Remove(leaseName(ip)); err != nil {
		return ioErr("removing lease file", err)
	}
	s.point("lease-removed")
	return s.indexRemove(owner, ip)
}

// releaseErr names the lease that could not be released and why, in the
// user's words when the reason is a read-only lease directory (the files
// it failed on are ours, not the user's).
func releaseErr(ip net.IP, owner types.Attachment, dir string, err error) error {
	what := fmt.Sprintf("cannot release the lease of %s held by container %q interface %q", ip, owner.ContainerID, owner.IfName)
	if errors.Is(err, unix.EROFS) {
		return ioErr(what, fmt.Errorf("the lease directory %s is on a read-only file system", dir))
	}
	return ioErr(what, err)
}

// Owner returns the attachment a lease file names, with IfName empty for a
// legacy lease; ok is false when ip is not leased.
func (s *Store) Owner(ip net.IP) (owner types.Attachment, ok bool, err error) {
	if ok, err := s.openNet(false); !ok || err != nil {
		return types.Attachment{}, false, err
	}
	data, err := s.net.ReadFile(leaseName(ip))
	if errors.Is(err, fs.ErrNotExist) {
		return types.Attachment{}, false, nil
	}
	if err != nil {
		return types.Attachment{}, false, ioErr("reading lease", err)
	}
	return parseLease(data), true, nil
}

// parseLease reads "<id>\r\n<ifname>" or the legacy "<id>", ignoring
// whitespace around the whole content as the reference does.
func parseLease(data []byte) types.Attachment {
	text := strings.TrimSpace(string(data))
	if id, ifname, ok := strings.Cut(text, "\r\n"); ok {
		return types.Attachment{ContainerID: id, IfName: ifname}
	}
	return types.Attachment{ContainerID: text}
}

// Leases returns the addresses leased to a; when there are none, those
// leased in the legacy format to a's container ID. Each address the index
// names is confirmed by reading its lease file.
func (s *Store) Leases(a types.Attachment) ([]net.IP, error) {
	ips, err := s.confirmed(a, a)
	if err != nil || len(ips) > 0 {
		return ips, err
	}
	legacy := types.Attachment{ContainerID: a.ContainerID}
	return s.confirmed(legacy, legacy)
}

func (s *Store) confirmed(key, want types.Attachment) ([]net.IP, error) {
	candidates, err := s.indexGet(key)
	if err != nil {
		return nil, err
	}
	var out []net.IP
	for _, ip := range candidates {
		owner, ok, err := s.Owner(ip)
		if err != nil {
			return nil, err
		}
		if ok && owner == want {
			out = append(out, ip)
		}
	}
	return out, nil
}

// LastReserved returns the last address reserved in range set set, or nil.
func (s *Store) LastReserved(set int) (net.IP, error) {
	if ok, err := s.openNet(false); !ok || err != nil {
		return nil, err
	}
	data, err := s.net.ReadFile(fmt.Sprintf("%s%d", lastReservedPrefix, set))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioErr("reading last reserved address", err)
	}
	return net.ParseIP(strings.TrimSpace(string(data))), nil
}

func (s *Store) writeLastReserved(set int, ip net.IP) error {
	name := fmt.Sprintf("%s%d", lastReservedPrefix, set)
	if err := exchange(s.net, name+spareSuffix, name, []byte(ip.String())); err != nil {
		return ioErr("writing "+name, err)
	}
	s.point("last-reserved-written")
	return nil
}

// Count returns how many lease files the network directory holds.
func (s *Store) Count() (int, error) {
	names, err := s.leaseNames()
	return len(names), err
}

// Taken reports whether ip is leased.
func (s *Store) Taken(ip net.IP) (bool, error) {
	if ok, err := s.openNet(false); !ok || err != nil {
		return false, err
	}
	taken, err := s.net.Exists(leaseName(ip))
	if err != nil {
		return false, ioErr("checking lease", err)
	}
	return taken, nil
}

// leaseNames lists the names of the lease files: those that are addresses.
func (s *Store) leaseNames() ([]string, error) {
	if ok, err := s.openNet(false); !ok || err != nil {
		return nil, err
	}
	entries, err := s.net.List()
	if err != nil {
		return nil, ioErr("listing leases", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsRegular() && net.ParseIP(e.Name) != nil {
			out = append(out, e.Name)
		}
	}
	return out, nil
}

func ioErr(what string, err error) error {
	return types.Errorf(types.ErrIO, "%s: %w", what, err)
}
