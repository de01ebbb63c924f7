// Package records keeps, for every live attachment of bridge and portmap,
// what its plugin needs to put the attachment's firewall rules and node
// sysctls back without the runtime: the plugin's effective input (the
// network configuration as the runtime sent it, runtimeConfig and
// prevResult included, CNI_ARGS, container ID, interface, netns path) and
// the result ADD returned.
//
// Why the input and not a description of the rules: the plugin that wrote
// a record is the one that repairs it (cnisuite resync starts the plugin
// binary as a helper, which runs the same functions its ADD runs to build
// and install the rules and sysctls), so whatever a later version of a
// plugin derives from its configuration — port ranges, a new chain —
// comes back without a change here, and nothing can drift between what
// ADD installs and what a repair installs.
//
// A record is one file, written atomically (a temporary file renamed over
// it) when ADD succeeds and removed by DEL; GC removes those of
// attachments the runtime no longer lists:
//
//	/run/cnisuite/records/<plugin>/<network>/<hash of container ID and interface>.json
//
// It lives under /run, so it vanishes with a reboot, as the rules and the
// sysctls do. Every file operation goes through pkg/statedir: no link is
// ever followed below the root.
package records

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// Dir is where records live on a node (Store's zero value uses it).
const Dir = "/run/cnisuite/records"

// suffix ends every record's file name; temporary files do not have it.
const suffix = ".json"

// Record is what a plugin needs to repair one attachment.
type Record struct {
	Plugin      string `json:"plugin"`
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	Netns       string `json:"netns,omitempty"`
	// Args is CNI_ARGS as ADD got it.
	Args string `json:"args,omitempty"`
	// Config is the network configuration ADD read on stdin.
	Config json.RawMessage `json:"config"`
	// Result is the result ADD returned, when it is not in Config already
	// (bridge's; portmap's is its prevResult).
	Result json.RawMessage `json:"result,omitempty"`
	// Binary is the plugin executable that wrote the record: the one that
	// repairs it.
	Binary string `json:"binary,omitempty"`

	// File is the record's file name in its network's directory (set by
	// List, First and Read).
	File string `json:"-"`
}

// encode writes r as json.Marshal does, on the plain path (pkg/jsonscan)
// unless a raw member is not valid JSON.
func (r Record) encode() ([]byte, error) {
	o := jsonscan.NewObject(nil)
	o.String("plugin", r.Plugin)
	o.String("network", r.Network)
	o.String("containerID", r.ContainerID)
	o.String("ifName", r.IfName)
	o.OptString("netns", r.Netns)
	o.OptString("args", r.Args)
	o.Raw("config", r.Config)
	o.OptRaw("result", r.Result)
	o.OptString("binary", r.Binary)
	if data, ok := o.Close(); ok {
		return data, nil
	}
	return json.Marshal(r)
}

// Store reads and writes records under Root ("" = Dir).
type Store struct {
	Root string
}

// off reports whether the store keeps no records: the default store, in a
// rootless runtime's user namespace (uid 0 there, not root of the node),
// where /run/cnisuite belongs to the node's root. Such a node has no
// resync either (it cannot write the node's firewall); every read finds
// nothing and every write succeeds at doing nothing.
func (s Store) off() bool { return s.Root == "" && !rootless.NodeRoot() }

func (s Store) root() string {
	if s.Root == "" {
		return Dir
	}
	return s.Root
}

// FileName names the record of an attachment in its network's directory.
func FileName(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "\x00" + ifName))
	return hex.EncodeToString(sum[:16]) + suffix
}

// checkNames refuses a plugin or network name that cannot be one path
// element: both become directories.
func checkNames(plugin, network string) error {
	if plugin == "" || strings.ContainsAny(plugin, "/\x00") || strings.HasPrefix(plugin, ".") {
		return fmt.Errorf("record: plugin %q: not a plain name", plugin)
	}
	return types.ValidateNetworkName(network)
}

// open opens the network's directory, creating the path when create is set;
// a missing one without create is fs.ErrNotExist.
func (s Store) open(plugin, network string, create bool) (*statedir.Dir, error) {
	if s.off() {
		return nil, fs.ErrNotExist
	}
	if err := checkNames(plugin, network); err != nil {
		return nil, err
	}
	root, err := statedir.OpenRoot(s.root(), create, 0o700)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	p, err := root.Sub(plugin, create, 0o700)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Sub(network, create, 0o700)
}

// openExisting opens the network's directory for Remove and GC: ok is
// false, with no error, when no record can be there (no directory, or a
// name Write refuses).
func (s Store) openExisting(plugin, network string) (d *statedir.Dir, ok bool, err error) {
	if checkNames(plugin, network) != nil {
		return nil, false, nil
	}
	d, err = s.open(plugin, network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("record: %w", err)
	}
	return d, true, nil
}

// Write stores r, replacing the attachment's earlier record at once: a
// reader sees the old record or the new one, never a part.
func (s Store) Write(r Record) error {
	if r.ContainerID == "" || r.IfName == "" {
		return fmt.Errorf("record: container ID %q and interface %q: both are needed", r.ContainerID, r.IfName)
	}
	if s.off() {
		return nil
	}
	data, err := r.encode()
	if err != nil {
		return fmt.Errorf("record: encoding: %w", err)
	}
	d, err := s.open(r.Plugin, r.Network, true)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	tmp := ".tmp-" + rand.Text()
	if err := d.CreateNew(tmp, data); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := d.Rename(tmp, FileName(r.ContainerID, r.IfName), 0); err != nil {
		return errors.Join(fmt.Errorf("record: %w", err), d.Remove(tmp))
	}
	return nil
}

// Remove deletes the attachment's record; an absent one is not an error.
// The network's directory stays: removing it could race with an ADD
// writing into it.
func (s Store) Remove(plugin, network, containerID, ifName string) error {
	d, ok, err := s.openExisting(plugin, network)
	if !ok {
		return err
	}
	defer d.Close()
	// Under the record's lock: a repair holding it finishes first, and
	// one that comes later finds no record (ReadLocked).
	name := FileName(containerID, ifName)
	f, err := d.Lock(context.Background(), name, lockWait)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	if err := d.Remove(name); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// lockWait bounds the wait for a repair holding a record.
const lockWait = 30 * time.Second

// ReadLocked returns the record file of plugin's network with its lock
// held until release is called: while a repair holds it, DEL cannot
// remove the record, and DEL removes the record before the rules, so a
// repair never puts back the rules of an attachment being deleted. A
// record removed meanwhile is fs.ErrNotExist.
func (s Store) ReadLocked(ctx context.Context, plugin, network, file string) (r Record, release func(), err error) {
	if !strings.HasSuffix(file, suffix) || strings.HasPrefix(file, ".") {
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
	data, err := io.ReadAll(f)
	if err == nil {
		r, err = decode(data, d.Join(file))
	}
	if err != nil {
		f.Close()
		return Record{}, nil, err
	}
	r.File = file
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
		if e.IsRegular() && strings.HasSuffix(e.Name, suffix) && !strings.HasPrefix(e.Name, ".") {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// List returns the records of plugin's network, in file-name order. A
// record that cannot be decoded is reported in the error and left out.
func (s Store) List(plugin, network string) ([]Record, error) {
	d, err := s.open(plugin, network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	files, err := names(d)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var out []Record
	var errs []error
	for _, f := range files {
		r, err := read(d, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// First returns one record of plugin's network (the first by file name)
// and how many the network has: what STATUS needs, read with one
// directory listing and one file.
func (s Store) First(plugin, network string) (r Record, count int, err error) {
	d, err := s.open(plugin, network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, 0, nil
	}
	if err != nil {
		return Record{}, 0, fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	files, err := names(d)
	if err != nil || len(files) == 0 {
		return Record{}, 0, err
	}
	r, err = read(d, files[0])
	return r, len(files), err
}

func read(d *statedir.Dir, name string) (Record, error) {
	var r Record
	data, err := d.ReadFile(name)
	if err != nil {
		return r, fmt.Errorf("record: %w", err)
	}
	if r, err = decode(data, d.Join(name)); err != nil {
		return r, err
	}
	r.File = name
	return r, nil
}

// decode reads a record's content; path names it in errors.
func decode(data []byte, path string) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("record %s: %w", path, err)
	}
	if len(r.Config) == 0 || r.ContainerID == "" || r.IfName == "" {
		return r, fmt.Errorf("record %s: config, containerID and ifName are needed", path)
	}
	return r, nil
}

// Read returns the record file of plugin's network.
func (s Store) Read(plugin, network, file string) (Record, error) {
	if !strings.HasSuffix(file, suffix) || strings.HasPrefix(file, ".") {
		return Record{}, fmt.Errorf("record: %q: not a record's file name", file)
	}
	d, err := s.open(plugin, network, false)
	if err != nil {
		return Record{}, fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	return read(d, file)
}

// Networks returns the networks of plugin that have a directory, sorted.
func (s Store) Networks(plugin string) ([]string, error) {
	if s.off() {
		return nil, nil
	}
	root, err := statedir.OpenRoot(s.root(), false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer root.Close()
	p, err := root.Sub(plugin, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer p.Close()
	entries, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type&fs.ModeDir != 0 && types.ValidateNetworkName(e.Name) == nil {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Attachment names an attachment GC keeps (cni.dev/valid-attachments).
type Attachment = types.Attachment

// GC removes the records of plugin's network whose attachment is not in
// keep, and temporary files a killed writer left (older than tmpAge, so
// that a writer at work keeps its own).
func (s Store) GC(plugin, network string, keep []Attachment) error {
	d, ok, err := s.openExisting(plugin, network)
	if !ok {
		return err
	}
	defer d.Close()
	kept := map[string]bool{}
	for _, a := range keep {
		kept[FileName(a.ContainerID, a.IfName)] = true
	}
	entries, err := d.List()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsRegular() || kept[e.Name] {
			continue
		}
		if strings.HasPrefix(e.Name, ".tmp-") && !stale(d, e.Name) {
			continue
		}
		errs = append(errs, d.Remove(e.Name))
	}
	return errors.Join(errs...)
}

// tmpAge is the age after which a temporary file is a killed writer's.
const tmpAge = time.Minute

func stale(d *statedir.Dir, name string) bool {
	st, err := d.Lstat(name)
	if err != nil {
		return false
	}
	return time.Since(time.Unix(st.Mtim.Unix())) > tmpAge
}
