// Package records keeps, for every live attachment of bridge and portmap,
// what its plugin needs to put the attachment's firewall rules and node
// sysctls back without the runtime: the plugin's effective input (the
// network configuration as the runtime sent it, runtimeConfig and
// prevResult included, CNI_ARGS, container ID, interface, netns path) and
// the result ADD returned.
//
// Why the input and not a description of the rules: the plugin of the
// record's type repairs it (cnisuite resync starts it as a helper, which
// runs the same functions its ADD runs to build and install the rules and
// sysctls), so whatever a later version of a
// plugin derives from its configuration — port ranges, a new chain —
// comes back without a change here, and nothing can drift between what
// ADD installs and what a repair installs.
//
// A record is one file, written atomically (a temporary file renamed over
// it) when ADD succeeds and removed by DEL; GC removes those of
// attachments the runtime no longer lists:
//
//	/run/cnisuite/records/<plugin>/<network>/<hash of container ID and interface>.json
//	/run/cnisuite/records/<plugin>/<network>/.tmp-<the same name>   (while ADD writes it)
//
// The temporary file is named after the record, so that the next ADD,
// DEL or GC of the attachment removes one a killed ADD left.
//
// A record is data, never trusted for more: it names no program (cnisuite
// resync finds the plugin by the configuration's type in the operator's
// plugin directories), every read is bounded (MaxRecordSize) and checked
// (see validate) before use.
//
// It lives under /run, so it vanishes with a reboot, as the rules and the
// sysctls do. Every file operation goes through pkg/statedir: no link is
// ever followed below the root.
package records

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

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

	// File is the record's file name in its network's directory, and Type
	// the configuration's plugin type (both set by List, First and Read).
	File string `json:"-"`
	Type string `json:"-"`
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

// tmpPrefix starts a temporary file's name: ".tmp-" and the name of the
// record it becomes.
const tmpPrefix = ".tmp-"

// Write stores r, replacing the attachment's earlier record at once: a
// reader sees the old record or the new one, never a part. A record past
// MaxRecordSize is refused: no reader would take it.
func (s Store) Write(r Record) error {
	if r.ContainerID == "" || r.IfName == "" {
		return fmt.Errorf("record: container ID %q and interface %q: both are needed", r.ContainerID, r.IfName)
	}
	if s.off() {
		return nil
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record: encoding: %w", err)
	}
	if len(data) > MaxRecordSize {
		return fmt.Errorf("record of %s/%s: %d bytes, past the limit of %d", r.ContainerID, r.IfName, len(data), MaxRecordSize)
	}
	d, err := s.open(r.Plugin, r.Network, true)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer d.Close()
	name := FileName(r.ContainerID, r.IfName)
	tmp := tmpPrefix + name
	// A killed ADD of the attachment may have left the file: it goes.
	if err := d.Remove(tmp); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := d.CreateNew(tmp, data); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("record of %s/%s: another call for the attachment is writing it at the same time (a runtime must not run two operations on one container at once): %w", r.ContainerID, r.IfName, err)
	} else if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := d.Rename(tmp, name, 0); err != nil {
		return errors.Join(fmt.Errorf("record: %w", err), d.Remove(tmp))
	}
	return nil
}

// Remove deletes the attachment's record, and the temporary file a killed
// ADD of it left; an absent one is not an error. The network's directory
// stays: removing it could race with an ADD writing into it.
func (s Store) Remove(plugin, network, containerID, ifName string) error {
	d, ok, err := s.openExisting(plugin, network)
	if !ok {
		return err
	}
	defer d.Close()
	name := FileName(containerID, ifName)
	return errors.Join(removeLocked(context.Background(), d, name), wrap(d.Remove(tmpPrefix+name)))
}

// ErrBusy is the cause of Remove's and GC's error when a repair held the
// record for the whole wait: nothing of the attachment may go then, or
// the repair would put it back.
var ErrBusy = errors.New("record held by a repair")

// removeLocked removes the record file name under its lock: a repair
// holding it finishes first, and one that comes later finds no record
// (ReadLocked). An absent record is not an error.
func removeLocked(ctx context.Context, d *statedir.Dir, name string) error {
	f, err := lockRecord(ctx, d, name)
	if f == nil {
		return err
	}
	defer f.Close()
	return wrap(d.Remove(name))
}

// lockRecord opens the record file name and takes its lock; nil, with no
// error, when there is no such file.
func lockRecord(ctx context.Context, d *statedir.Dir, name string) (*os.File, error) {
	f, err := d.LockExisting(ctx, name, lockWait)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, statedir.ErrLockTimeout) || ctx.Err() != nil {
		return nil, fmt.Errorf("record %s: %w: %w", d.Join(name), ErrBusy, err)
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return f, nil
}

// wrap marks err as the records'.
func wrap(err error) error {
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// lockWait bounds the wait for a repair holding a record.
const lockWait = 30 * time.Second

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
// keep, each under its lock (a repair of it finishes first), and the
// temporary files of those attachments; it returns the attachments whose
// records it removed (those it could read). A caller removes the
// attachments' rules only after GC succeeded: a record GC could not
// remove (ErrBusy) keeps its rules for the next GC.
func (s Store) GC(ctx context.Context, plugin, network string, keep []Attachment) ([]Attachment, error) {
	d, ok, err := s.openExisting(plugin, network)
	if !ok {
		return nil, err
	}
	defer d.Close()
	kept := map[string]bool{}
	for _, a := range keep {
		kept[FileName(a.ContainerID, a.IfName)] = true
	}
	entries, err := d.List()
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var removed []Attachment
	var errs []error
	for _, e := range entries {
		if !e.IsRegular() || kept[e.Name] {
			continue
		}
		if of, ok := strings.CutPrefix(e.Name, tmpPrefix); ok {
			// A temporary file of a kept attachment is its ADD's (running,
			// or killed: its DEL removes it).
			if kept[of] {
				continue
			}
			errs = append(errs, wrap(d.Remove(e.Name)))
			continue
		}
		a, err := dropRecord(ctx, d, plugin, network, e.Name)
		errs = append(errs, err)
		if a != nil {
			removed = append(removed, *a)
		}
	}
	return removed, errors.Join(errs...)
}

// dropRecord removes the record file name of plugin's network under its
// lock, and returns its attachment when the record was valid.
func dropRecord(ctx context.Context, d *statedir.Dir, plugin, network, name string) (*Attachment, error) {
	f, err := lockRecord(ctx, d, name)
	if f == nil {
		return nil, err
	}
	defer f.Close()
	var a *Attachment
	if data, err := statedir.ReadAllMax(f, MaxRecordSize); err == nil {
		if r, err := decode(data, d.Join(name), plugin, network); err == nil {
			a = &Attachment{ContainerID: r.ContainerID, IfName: r.IfName}
		}
	}
	if err := d.Remove(name); err != nil {
		return nil, wrap(err)
	}
	return a, nil
}
