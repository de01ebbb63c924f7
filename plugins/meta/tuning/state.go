package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"cnisuite/pkg/types"
)

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

// Store keeps one state file per attachment in a directory.
type Store struct {
	Dir string
}

// stateFileName is the reference plugin's name for an attachment's backup.
func stateFileName(containerID, ifName string) string {
	return containerID + "_" + ifName + ".json"
}

// path validates the parts of the file name and returns the file's path.
func (s Store) path(containerID, ifName string) (string, error) {
	if err := types.ValidateContainerID(containerID); err != nil {
		return "", err
	}
	if err := types.ValidateIfName(ifName); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, stateFileName(containerID, ifName)), nil
}

// Load returns the attachment's state, nil when there is none.
func (s Store) Load(containerID, ifName string) (*State, error) {
	p, err := s.path(containerID, ifName)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "reading tuning state: %w", err)
	}
	st := &State{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, types.Errorf(types.ErrDecoding, "tuning state %s: %w", p, err)
	}
	return st, nil
}

// Save writes the attachment's state atomically: a 0600 file in a 0700
// directory.
func (s Store) Save(containerID, ifName string, st *State) error {
	p, err := s.path(containerID, ifName)
	if err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding tuning state: %w", err)
	}
	if err := ensureDir(s.Dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return types.Errorf(types.ErrIO, "writing tuning state: %w", err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name()) // best effort: the write already failed
		return types.Errorf(types.ErrIO, "writing tuning state %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name()) // best effort: the rename already failed
		return types.Errorf(types.ErrIO, "writing tuning state: %w", err)
	}
	return nil
}

// ensureDir creates dir with mode 0700, and narrows an existing one (the
// reference plugin creates it 0600) to 0700.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return types.Errorf(types.ErrIO, "creating tuning state directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return types.Errorf(types.ErrIO, "setting mode of tuning state directory: %w", err)
	}
	return nil
}

// Remove deletes the attachment's state; a missing file is not an error.
func (s Store) Remove(containerID, ifName string) error {
	p, err := s.path(containerID, ifName)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return types.Errorf(types.ErrIO, "removing tuning state: %w", err)
	}
	return nil
}

// GC removes the state files of network whose attachment is not in keep.
// Files of other networks, and files
// without a network (written by the reference plugin, which does not record
// it), are kept. A missing directory has nothing to collect.
func (s Store) GC(network string, keep []types.Attachment) error {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return types.Errorf(types.ErrIO, "listing tuning state directory: %w", err)
	}
	valid := map[string]bool{}
	for _, a := range keep {
		valid[stateFileName(a.ContainerID, a.IfName)] = true
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".json") || valid[name] || !s.ownedBy(name, network) {
			continue
		}
		if err := os.Remove(filepath.Join(s.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, types.Errorf(types.ErrIO, "removing tuning state: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ownedBy reports whether the state file name records network. A file that
// cannot be read or decoded is kept for DEL to report.
func (s Store) ownedBy(name, network string) bool {
	data, err := os.ReadFile(filepath.Join(s.Dir, name))
	if err != nil {
		return false
	}
	var st State
	if json.Unmarshal(data, &st) != nil {
		return false
	}
	return st.Network != "" && st.Network == network
}
