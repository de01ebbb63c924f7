package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// MaxRecordSize bounds a record file: the largest configuration a plugin
// reads (skel.MaxConfigSize, 16 MiB) and 1 MiB for the rest (CNI_ARGS,
// which the kernel limits to 128 KiB, bridge's result, a few KiB, the
// names). Write refuses a larger record, so every record ADD wrote is
// read; a larger file is not ours, and costs a reader (cnisuite resync,
// every STATUS) no more than this.
const MaxRecordSize = skel.MaxConfigSize + 1<<20

// ErrInvalid is the cause of the error about a record file that is not
// a valid record (past MaxRecordSize, not JSON, or failing validate).
var ErrInvalid = errors.New("not a valid record")

// isRecordName reports whether name is a record's file name (FileName's
// form; a temporary file starts with a dot).
func isRecordName(name string) bool {
	return strings.HasSuffix(name, suffix) && !strings.HasPrefix(name, ".")
}

// ReadLocked returns the record file of plugin's network with its lock
// held until release is called: while a repair holds it, DEL and GC
// cannot remove the record, and both remove the record before the rules,
// so a repair never puts back the rules of an attachment being deleted. A
// record removed meanwhile is fs.ErrNotExist.
func (s Store) ReadLocked(ctx context.Context, plugin, network, file string) (r Record, release func(), err error) {
	if !isRecordName(file) {
		return Record{}, nil, fmt.Errorf("record: %q: not a record's file name", file)
	}
	d, err := s.open(plugin, network, false)
	if err != nil {
		return Record{}, nil, fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	f, err := d.LockExisting(ctx, file, lockWait)
	if err != nil {
		return Record{}, nil, fmt.Errorf("record: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Nlink == 0 {
		f.Close()
		return Record{}, nil, fmt.Errorf("record %s: %w", d.Join(file), fs.ErrNotExist)
	}
	data, err := statedir.ReadAllMax(f, MaxRecordSize)
	if err != nil {
		f.Close()
		return Record{}, nil, readErr(err)
	}
	if r, err = decode(data, d.Join(file), plugin, network); err != nil {
		f.Close()
		return Record{}, nil, err
	}
	return r, func() { f.Close() }, nil
}

// names lists the record files of d, sorted.
func names(d *statedir.Dir) ([]string, error) {
	entries, err := d.List()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsRegular() && isRecordName(e.Name) {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// openListed opens plugin's network directory and lists its record
// files, sorted; d is nil, with no error, when the network has none.
func (s Store) openListed(plugin, network string) (d *statedir.Dir, files []string, err error) {
	d, err = s.open(plugin, network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("record: %w", err)
	}
	if files, err = names(d); err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("record: %w", err)
	}
	return d, files, nil
}

// Files returns the record files of plugin's network, sorted: what List
// reads, for a caller that reads them one at a time (Read).
func (s Store) Files(plugin, network string) ([]string, error) {
	d, files, err := s.openListed(plugin, network)
	if d != nil {
		d.Close()
	}
	return files, err
}

// List returns the records of plugin's network, in file-name order. A
// record that cannot be read or is not valid is reported in the error
// and left out.
func (s Store) List(plugin, network string) ([]Record, error) {
	d, files, err := s.openListed(plugin, network)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var out []Record
	var errs []error
	for _, f := range files {
		r, err := read(d, plugin, network, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// First returns one record of plugin's network (the first valid one by
// file name) and how many record files the network has: what STATUS
// needs, read with one directory listing and, unless a record is bad,
// one file.
func (s Store) First(plugin, network string) (r Record, count int, err error) {
	d, files, err := s.openListed(plugin, network)
	if d == nil {
		return Record{}, 0, err
	}
	defer d.Close()
	var errs []error
	for _, f := range files {
		r, err := read(d, plugin, network, f)
		if err == nil {
			return r, len(files), nil
		}
		errs = append(errs, err)
	}
	return Record{}, len(files), errors.Join(errs...)
}

// Read returns the record file of plugin's network.
func (s Store) Read(plugin, network, file string) (Record, error) {
	if !isRecordName(file) {
		return Record{}, fmt.Errorf("record: %q: not a record's file name", file)
	}
	d, err := s.open(plugin, network, false)
	if err != nil {
		return Record{}, fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	return read(d, plugin, network, file)
}

func read(d *statedir.Dir, plugin, network, name string) (Record, error) {
	data, err := d.ReadFileMax(name, MaxRecordSize)
	if err != nil {
		return Record{}, readErr(err)
	}
	return decode(data, d.Join(name), plugin, network)
}

// readErr describes a failed read of a record file; one past
// MaxRecordSize is ErrInvalid.
func readErr(err error) error {
	if errors.Is(err, statedir.ErrTooLarge) {
		return fmt.Errorf("record: %w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("record: %w", err)
}

// decode reads the record file at path, of plugin's network, and checks
// it (validate); path names it in errors.
func decode(data []byte, path, plugin, network string) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("record %s: %w: %w", path, ErrInvalid, err)
	}
	r.File = filepath.Base(path)
	if err := r.validate(plugin, network); err != nil {
		return Record{}, fmt.Errorf("record %s: %w: %w", path, ErrInvalid, err)
	}
	return r, nil
}

// validate checks a record read from plugin's network directory before
// anything uses it: it must be that directory's and its file's (names
// that the hash of the file name covers), name a container, interface and
// netns path as a runtime does, and hold a configuration object of the
// network whose plugin type is a plain name (the plugin cnisuite resync
// runs for it). It reports every problem at once.
func (r *Record) validate(plugin, network string) error {
	var errs []error
	if r.Plugin != plugin || r.Network != network {
		errs = append(errs, fmt.Errorf("plugin %q and network %q: want %q and %q, those of its directory", r.Plugin, r.Network, plugin, network))
	}
	idErr, ifErr := types.ValidateContainerID(r.ContainerID), types.ValidateIfName(r.IfName)
	errs = append(errs, idErr, ifErr)
	if idErr == nil && ifErr == nil && FileName(r.ContainerID, r.IfName) != r.File {
		errs = append(errs, fmt.Errorf("containerID %q and ifName %q: the file of their record is %s", r.ContainerID, r.IfName, FileName(r.ContainerID, r.IfName)))
	}
	if r.Netns != "" && (!filepath.IsAbs(r.Netns) || strings.ContainsRune(r.Netns, 0)) {
		errs = append(errs, fmt.Errorf("netns %q: not an absolute path", r.Netns))
	}
	if len(r.Result) > 0 && !isObject(r.Result) {
		errs = append(errs, errors.New("result: not a JSON object"))
	}
	errs = append(errs, r.validateConfig(network))
	return errors.Join(errs...)
}

// validateConfig checks the recorded configuration and sets r.Type.
func (r *Record) validateConfig(network string) error {
	var c struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if !isObject(r.Config) || json.Unmarshal(r.Config, &c) != nil {
		return errors.New("config: not a JSON object with string keys name and type")
	}
	var errs []error
	if c.Name != network {
		errs = append(errs, fmt.Errorf("config name %q: want the network's, %q", c.Name, network))
	}
	if !plainName(c.Type) {
		errs = append(errs, fmt.Errorf("config type %q: not a plugin's file name", c.Type))
	}
	r.Type = c.Type
	return errors.Join(errs...)
}

// plainName reports whether s can name a file in a plugin directory.
func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 255 && !strings.ContainsAny(s, "/\x00")
}

// isObject reports whether the JSON value data is an object.
func isObject(data json.RawMessage) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}
