// Package sysctlkeep keeps the node sysctls that attachments depend on in
// systemd-sysctl's runtime directory, so that `sysctl --system` (run by
// TuneD, by systemd-sysctl on a package upgrade, by an admin) sets them
// again instead of turning them back (TuneD issue 816: ip_forward back to
// 0 cut every pod's egress).
//
// One file, /run/sysctl.d/zz-cnisuite.conf, lists every key some live
// attachment holds; its name sorts after the usual 99-*.conf, so that its
// values win. Who holds which key is one empty file per key and holder:
//
//	/run/cnisuite/sysctl-holds/<key, slashes as %>/<holder>
//
// A holder is an attachment (plugin, network, container, interface).
// Hold adds one, Release removes an attachment's from every key; the file
// is rewritten only when the set of held keys changes (the first holder of
// a key comes or the last goes), so most ADDs and DELs write one small
// file and nothing else. Everything lives under /run: it vanishes with a
// reboot, as the pods and the sysctls do.
package sysctlkeep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	rootlessenv "cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
)

// Places, on a node (Keeper's zero value uses them).
const (
	SysctlDir = "/run/sysctl.d"
	FileName  = "zz-cnisuite.conf"
	HoldsDir  = "/run/cnisuite/sysctl-holds"
)

// maxFileSize bounds the read of the file (Restore): 1 MiB, the keys of
// over 10,000 links.
const maxFileSize = 1 << 20

// lockWait bounds the wait for another call's update of the holds.
const lockWait = 30 * time.Second

// Keeper writes the holds and the file; tests point it elsewhere.
type Keeper struct {
	SysctlDir, HoldsDir string
}

// Holder names an attachment.
func Holder(plugin, network, containerID, ifname string) string {
	sum := sha256.Sum256([]byte(plugin + "\x00" + network + "\x00" + containerID + "\x00" + ifname))
	return hex.EncodeToString(sum[:16])
}

func (k Keeper) dirs() (sysctlDir, holdsDir string) {
	sysctlDir, holdsDir = k.SysctlDir, k.HoldsDir
	if sysctlDir == "" {
		sysctlDir = SysctlDir
	}
	if holdsDir == "" {
		holdsDir = HoldsDir
	}
	return sysctlDir, holdsDir
}

// rootless reports whether the node's places are meant and the process is
// not root of the node (a rootless runtime's plugin). Then Hold and
// Release do nothing: the node's `sysctl --system` sets the initial
// network namespace only, never the one a rootless runtime made for its
// containers, so there is nothing to keep; and /run/sysctl.d is the real
// root's, where writing would fail with "permission denied".
func (k Keeper) rootless() bool {
	return k.SysctlDir == "" && k.HoldsDir == "" && !rootlessenv.NodeRoot()
}

// keyDir names a key's directory of holds: the key in slash form
// ("net/ipv4/conf/eth0.100/route_localnet"), slashes as '%' (no key has
// one), the value after '='.
func keyDir(key, value string) string {
	return strings.ReplaceAll(key, "/", "%") + "=" + value
}

// Hold records that holder needs key = value (key in slash form) and puts
// it in the file when it is the key's first holder.
func (k Keeper) Hold(key, value, holder string) error {
	if k.rootless() {
		return nil
	}
	return k.locked(func(holds *statedir.Dir) error {
		d, err := holds.Sub(keyDir(key, value), true, 0o700)
		if err != nil {
			return err
		}
		defer d.Close()
		// Whether anyone holds the key, not who: one read, however many
		// pods hold it.
		empty, err := d.Empty(nil)
		if err != nil {
			return err
		}
		if err := d.Overwrite(holder, nil); err != nil {
			return err
		}
		if !empty {
			return nil // held already: the file lists it
		}
		return k.rewrite(holds)
	})
}

// Release drops every hold of holder; a key left without holders leaves
// the file (its value stays in the kernel: another process may want it).
// It also finishes what a Release killed half-way left: a key directory
// emptied but still listed, or still there.
func (k Keeper) Release(holder string) error {
	return k.drop(func(_ *statedir.Dir, name string) bool { return name == holder })
}

// Prune drops every hold for which drop, given its holder and the time
// the hold was last taken, says so: the holds of attachments that are
// gone without their DEL's Release (a DEL killed between removing its
// record and releasing, a GC of attachments whose DEL never came). GC and
// cnisuite resync call it (pkg/resync).
func (k Keeper) Prune(drop func(holder string, taken time.Time) bool) error {
	return k.drop(func(key *statedir.Dir, name string) bool {
		st, err := key.Lstat(name)
		return err == nil && drop(name, time.Unix(st.Mtim.Unix()))
	})
}

// matcher tells the holds to drop: a holder's file name in a key's
// directory.
type matcher func(key *statedir.Dir, holder string) bool

// drop removes the holds whose holder matches, in every key, and then the
// key directories left empty, rewriting the file first when there are
// such keys: a call killed at any point leaves at worst an empty key
// directory, which the file no longer lists after the next rewrite
// (heldText passes over it) and the next drop removes.
func (k Keeper) drop(match matcher) error {
	if k.rootless() {
		return nil
	}
	return k.locked(func(holds *statedir.Dir) error {
		keys, err := holds.List()
		if err != nil {
			return err
		}
		var emptied []string
		dropped := 0
		var errs []error
		for _, e := range keys {
			if e.Type&fs.ModeDir == 0 {
				continue
			}
			n, empty, err := dropIn(holds, e.Name, match)
			errs = append(errs, err)
			dropped += n
			if empty {
				emptied = append(emptied, e.Name)
			}
		}
		if dropped == 0 && len(emptied) == 0 {
			return errors.Join(errs...)
		}
		// The file is compared, not only rewritten when a key emptied: an
		// earlier release removed a key's directory before the file's line,
		// and a Release of it killed in between left the line.
		if _, err := k.sync(holds, false); err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, key := range emptied {
			errs = append(errs, holds.RemoveDir(key))
		}
		return errors.Join(errs...)
	})
}

// dropIn removes the holds of one key whose holder matches and says how
// many it removed; empty is true when the key has none left (whoever took
// the last one).
func dropIn(holds *statedir.Dir, key string, match matcher) (dropped int, empty bool, err error) {
	d, err := holds.Sub(key, false, 0)
	if err != nil {
		return 0, false, err
	}
	defer d.Close()
	entries, err := d.List()
	if err != nil {
		return 0, false, err
	}
	left := 0
	for _, e := range entries {
		if !match(d, e.Name) {
			left++
			continue
		}
		if err := d.Remove(e.Name); err != nil {
			return dropped, false, err
		}
		dropped++
	}
	return dropped, left == 0, nil
}

// rewrite writes the file from the keys held, atomically, or removes it
// when none is.
func (k Keeper) rewrite(holds *statedir.Dir) error {
	text, err := heldText(holds)
	if err != nil {
		return err
	}
	sysctlDir, _ := k.dirs()
	out, err := statedir.OpenRoot(sysctlDir, true, 0o755)
	if err != nil {
		return err
	}
	defer out.Close()
	if text == "" {
		return out.Remove(FileName)
	}
	tmp := "." + FileName + ".tmp"
	if err := errors.Join(out.Remove(tmp), out.CreateNew(tmp, []byte(text))); err != nil {
		return err
	}
	return out.Rename(tmp, FileName, 0)
}

// heldText is the file's text for the keys held, "" when none is.
func heldText(holds *statedir.Dir) (string, error) {
	keys, err := holds.List()
	if err != nil {
		return "", err
	}
	var lines []string
	for _, e := range keys {
		if e.Type&fs.ModeDir == 0 {
			continue
		}
		// A key without holders is not held: a Hold or Release killed
		// half-way left its directory, which the next Release removes.
		if held, err := hasHolders(holds, e.Name); err != nil || !held {
			if err != nil {
				return "", err
			}
			continue
		}
		key, value, _ := strings.Cut(strings.ReplaceAll(e.Name, "%", "/"), "=")
		lines = append(lines, key+" = "+value)
	}
	if len(lines) == 0 {
		return "", nil
	}
	sort.Strings(lines)
	return "# Written by the cnisuite CNI plugins: sysctls live pods need.\n" +
		"# Removed with the last pod that needs them; do not edit.\n" + strings.Join(lines, "\n") + "\n", nil
}

// hasHolders reports whether the key's directory holds a hold.
func hasHolders(holds *statedir.Dir, key string) (bool, error) {
	d, err := holds.Sub(key, false, 0)
	if err != nil {
		return false, err
	}
	defer d.Close()
	empty, err := d.Empty(nil)
	return !empty, err
}

// Restore writes the file again when it no longer says what the holds
// do: another program (an admin, a package's cleanup of /run/sysctl.d)
// removed or changed it, and the next `sysctl --system` would no longer
// keep the keys. Hold does not notice that (it writes the file only for
// a key's first holder); cnisuite resync and watch call Restore. changed
// reports whether the file was (in a dry run: would be) written again.
func (k Keeper) Restore(dryRun bool) (changed bool, err error) {
	if k.rootless() {
		return false, nil
	}
	err = k.locked(func(holds *statedir.Dir) error {
		changed, err = k.sync(holds, dryRun)
		return err
	})
	return changed, err
}

// sync writes the file again (unless dryRun) when it does not list what
// the holds do, and reports whether it did not.
func (k Keeper) sync(holds *statedir.Dir, dryRun bool) (changed bool, err error) {
	want, err := heldText(holds)
	if err != nil {
		return false, err
	}
	have, err := k.current()
	// A file that cannot be read (a link, a directory planted there, a
	// file past its bound) is replaced too: the rename puts ours in its
	// place.
	if changed = err != nil || have != want; !changed || dryRun {
		return changed, nil
	}
	return true, k.rewrite(holds)
}

// current reads the file as it is, "" when it (or its directory) does
// not exist; it follows no link.
func (k Keeper) current() (string, error) {
	sysctlDir, _ := k.dirs()
	d, err := statedir.OpenRoot(sysctlDir, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer d.Close()
	// Bounded: a file of ours lists a few keys (one per link with
	// route_localnet, at most); a larger one is not ours, and is replaced.
	data, err := d.ReadFileMax(FileName, maxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(data), err
}

// locked runs fn with the holds directory open and its lock held.
func (k Keeper) locked(fn func(holds *statedir.Dir) error) error {
	_, holdsDir := k.dirs()
	holds, err := statedir.OpenRoot(holdsDir, true, 0o700)
	if err != nil {
		return fmt.Errorf("sysctl holds: %w", err)
	}
	defer holds.Close()
	lock, err := holds.Lock(context.Background(), ".lock", lockWait)
	if err != nil {
		return fmt.Errorf("sysctl holds: %w", err)
	}
	defer lock.Close()
	if err := fn(holds); err != nil {
		return fmt.Errorf("sysctl holds: %w", err)
	}
	return nil
}
