// Package backup keeps what tuning's ADD found before it changed anything
// — a link's attributes, kernel features and channel counts, sysctls — one
// file per attachment, and gives it back to DEL to restore. The files are
// those of the reference plugin (its name for them, its keys for the link
// attributes), so a node can move between the two in either direction.
package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/ethconf"
)

// Setting is one resolved sysctl: its path relative to /proc/sys and value.
type Setting struct {
	Path  string `json:"key"`
	Value string `json:"value"`
}

// State is what ADD found before it changed anything, and what DEL puts
// back. The keys of the link attributes are those of the reference plugin's
// backup files, so a node can move between the two in either direction.
type State struct {
	// Network names the network of the attachment, so that GC of one
	// network leaves the files of others alone.
	Network string `json:"network,omitempty"`

	MAC      string    `json:"mac,omitempty"`
	Promisc  *bool     `json:"promisc,omitempty"`
	MTU      int       `json:"mtu,omitempty"`
	Allmulti *bool     `json:"allmulti,omitempty"`
	TxQLen   *int      `json:"txQLen,omitempty"`
	Sysctl   []Setting `json:"sysctl,omitempty"`

	// Features holds, for each kernel feature ADD changed, whether it was
	// wanted before. Files without it (older ones, the reference
	// plugin's) have no features to restore.
	Features map[string]bool `json:"features,omitempty"`
	// Channels holds the count before ADD of each channel count it changed.
	Channels *ethconf.ChannelState `json:"channels,omitempty"`
}

// Merge keeps every value already in s (the older, truer original) and adds
// those of newer that s lacks; used when ADD runs twice for one attachment.
func (s *State) Merge(newer *State) {
	if s.MAC == "" {
		s.MAC = newer.MAC
	}
	if s.Promisc == nil {
		s.Promisc = newer.Promisc
	}
	if s.MTU == 0 {
		s.MTU = newer.MTU
	}
	if s.Allmulti == nil {
		s.Allmulti = newer.Allmulti
	}
	if s.TxQLen == nil {
		s.TxQLen = newer.TxQLen
	}
	for name, wanted := range newer.Features {
		if _, known := s.Features[name]; !known {
			if s.Features == nil {
				s.Features = map[string]bool{}
			}
			s.Features[name] = wanted
		}
	}
	s.Channels = s.Channels.MergeOlder(newer.Channels)
	for _, n := range newer.Sysctl {
		known := false
		for _, o := range s.Sysctl {
			known = known || o.Path == n.Path
		}
		if !known {
			s.Sysctl = append(s.Sysctl, n)
		}
	}
}

// Store keeps one state file per attachment in a directory. The directory
// is the operator's (a link in its path is followed); below it, nothing is
// (pkg/statedir): a link planted under a state file's name is refused, and
// a directory that exists keeps its mode.
type Store struct {
	Dir string
}

// FileName is the reference plugin's name for an attachment's backup.
func FileName(containerID, ifName string) string {
	return containerID + "_" + ifName + ".json"
}

// name validates the parts of the file name and returns it.
func name(containerID, ifName string) (string, error) {
	if err := types.ValidateContainerID(containerID); err != nil {
		return "", err
	}
	if err := types.ValidateIfName(ifName); err != nil {
		return "", err
	}
	return FileName(containerID, ifName), nil
}

// open opens the state directory, creating it 0700 when create is set; a
// missing directory without create is nil.
func (s Store) open(create bool) (*statedir.Dir, error) {
	d, err := statedir.OpenRoot(s.Dir, create, 0o700)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
			hint = rootless.Hint("dataDir")
		}
		return nil, types.Errorf(types.ErrIO, "opening tuning state directory: %w%s", err, hint)
	}
	return d, nil
}

// Load returns the attachment's state, nil when there is none.
func (s Store) Load(containerID, ifName string) (*State, error) {
	n, err := name(containerID, ifName)
	if err != nil {
		return nil, err
	}
	d, err := s.open(false)
	if d == nil || err != nil {
		return nil, err
	}
	defer d.Close()
	data, err := d.ReadFile(n)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "reading tuning state: %w", err)
	}
	st, err := decodeState(data)
	if err != nil {
		return nil, types.Errorf(types.ErrDecoding, "tuning state %s: %w", d.Join(n), err)
	}
	return st, nil
}

// decodeState reads a state file.
func decodeState(data []byte) (*State, error) {
	st := &State{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, err
	}
	return st, nil
}

// Save writes the attachment's state atomically: a 0600 file, in a
// directory created 0700 when missing.
func (s Store) Save(containerID, ifName string, st *State) error {
	n, err := name(containerID, ifName)
	if err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding tuning state: %w", err)
	}
	d, err := s.open(true)
	if err != nil {
		return err
	}
	defer d.Close()
	tmp := ".tmp-" + n + "." + strconv.Itoa(os.Getpid())
	if err := writeSynced(d, tmp, data); err != nil {
		return types.Errorf(types.ErrIO, "writing tuning state: %w", err)
	}
	if err := d.Rename(tmp, n, 0); err != nil {
		return types.Errorf(types.ErrIO, "writing tuning state: %w", errors.Join(err, d.Remove(tmp)))
	}
	return nil
}

// writeSynced writes data to a new file name in d and syncs it; a file of
// that name left by a crashed run is replaced.
func writeSynced(d *statedir.Dir, name string, data []byte) error {
	if err := d.Remove(name); err != nil {
		return err
	}
	f, err := d.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		return errors.Join(err, d.Remove(name))
	}
	return nil
}

// Remove deletes the attachment's state; a missing file is not an error.
func (s Store) Remove(containerID, ifName string) error {
	n, err := name(containerID, ifName)
	if err != nil {
		return err
	}
	d, err := s.open(false)
	if d == nil || err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(n); err != nil {
		return types.Errorf(types.ErrIO, "removing tuning state: %w", err)
	}
	return nil
}

// GC removes the state files of network whose attachment is not in keep.
// Files of other networks, and files
// without a network (written by the reference plugin, which does not record
// it), are kept. A missing directory has nothing to collect.
func (s Store) GC(network string, keep []types.Attachment) error {
	d, err := s.open(false)
	if d == nil || err != nil {
		return err
	}
	defer d.Close()
	entries, err := d.List()
	if err != nil {
		return types.Errorf(types.ErrIO, "listing tuning state directory: %w", err)
	}
	valid := map[string]bool{}
	for _, a := range keep {
		valid[FileName(a.ContainerID, a.IfName)] = true
	}
	var errs []error
	for _, e := range entries {
		if !e.IsRegular() || !strings.HasSuffix(e.Name, ".json") || valid[e.Name] || !ownedBy(d, e.Name, network) {
			continue
		}
		if err := d.Remove(e.Name); err != nil {
			errs = append(errs, types.Errorf(types.ErrIO, "removing tuning state: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ownedBy reports whether the state file name records network. A file that
// cannot be read or decoded is kept for DEL to report.
func ownedBy(d *statedir.Dir, name, network string) bool {
	data, err := d.ReadFile(name)
	if err != nil {
		return false
	}
	st, err := decodeState(data)
	if err != nil {
		return false
	}
	return st.Network != "" && st.Network == network
}
