package firewall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// RecordRoot and RecordDir are where the automatic choice keeps each
// network's backend:
//
//	/run/cnisuite/fw-backend/<netns>/<network>/backend     "iptables" or "nftables"
//	/run/cnisuite/fw-backend/<netns>/<network>/<plugin>-<owner hash>
//
// one empty file per attachment holding the choice (a portmap holder's
// host ports are claimed in hostports/, claims_linux.go), under the
// network namespace the rules live in (its cookie, never reused while the machine
// runs). The choice goes with the last holder; /run empties at a reboot,
// as the rules do. Links are followed in RecordRoot only (the operator's
// path), never below it (pkg/statedir).
const (
	RecordRoot = "/run/cnisuite"
	RecordDir  = "fw-backend"
)

// recordWait bounds the wait for another call's update of a network's
// record.
const recordWait = 30 * time.Second

const (
	recordFile = "backend"
	recordLock = ".lock"
)

// records keeps the networks' choices under root; with root "" (a rootless
// runtime's user namespace, where /run is the real root's) it keeps
// nothing, and each call chooses anew.
type records struct{ root string }

// nsDir opens the directory of the calling thread's network namespace;
// without create, a missing one is fs.ErrNotExist.
func (r records) nsDir(create bool) (*statedir.Dir, error) {
	ns, err := netnsID()
	if err != nil {
		return nil, err
	}
	root, err := statedir.OpenRoot(r.root, create, 0o755)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	all, err := root.Sub(RecordDir, create, 0o700)
	if err != nil {
		return nil, err
	}
	defer all.Close()
	return all.Sub(ns, create, 0o700)
}

// dir opens the network's directory; without create, a missing one is
// fs.ErrNotExist.
func (r records) dir(network string, create bool) (*statedir.Dir, error) {
	nsDir, err := r.nsDir(create)
	if err != nil {
		return nil, err
	}
	defer nsDir.Close()
	return nsDir.Sub(network, create, 0o700)
}

// read returns the network's recorded backend; ok is false without one.
func (r records) read(network string) (kind string, ok bool, err error) {
	if r.root == "" {
		return "", false, nil
	}
	d, err := r.dir(network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, recordErr(network, err)
	}
	defer d.Close()
	kind, ok, err = readKind(d)
	return kind, ok, recordErr(network, err)
}

func readKind(d *statedir.Dir) (string, bool, error) {
	b, err := d.ReadFile(recordFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	switch kind := strings.TrimSpace(string(b)); kind {
	case KindIPTables, KindNFTables:
		return kind, true, nil
	default:
		return "", false, fmt.Errorf("%s: %q is no backend", d.Join(recordFile), kind)
	}
}

// hold makes o a holder of its network's choice and returns the choice:
// the recorded one, or, without a record, choose's, recorded first.
func (r records) hold(ctx context.Context, o Owner, choose func() (string, error)) (string, error) {
	if r.root == "" {
		return choose()
	}
	var kind string
	err := r.locked(ctx, o.Network, true, func(d *statedir.Dir) error {
		k, ok, err := readKind(d)
		if err != nil {
			return err
		}
		if !ok {
			if k, err = choose(); err != nil {
				return err
			}
			tmp := "." + recordFile + ".tmp"
			err = errors.Join(d.Remove(tmp), d.CreateNew(tmp, []byte(k+"\n")), d.Rename(tmp, recordFile, 0))
			if err != nil {
				return err
			}
		}
		kind = k
		return ignoreExist(d.CreateNew(holderName(o), nil))
	})
	return kind, err
}

// release lets go of o's hold, and of the record with the last holder.
func (r records) release(ctx context.Context, o Owner) error {
	return r.locked(ctx, o.Network, false, func(d *statedir.Dir) error {
		if err := d.Remove(holderName(o)); err != nil {
			return err
		}
		return dropUnheld(d)
	})
}

// prune lets go of the holds of plugin's attachments on network that keep
// (owners with ContainerID and IfName) lacks.
func (r records) prune(ctx context.Context, plugin, network string, keep []Owner) error {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[holderName(Owner{Plugin: plugin, Network: network, ContainerID: k.ContainerID, IfName: k.IfName})] = true
	}
	return r.locked(ctx, network, false, func(d *statedir.Dir) error {
		entries, err := d.List()
		if err != nil {
			return err
		}
		var errs []error
		for _, e := range entries {
			if strings.HasPrefix(e.Name, plugin+"-") && !kept[e.Name] {
				errs = append(errs, d.Remove(e.Name))
			}
		}
		return errors.Join(append(errs, dropUnheld(d))...)
	})
}

// dropUnheld removes the record when no holder is left. It reads the
// directory a few entries at a time and stops at the first holder, so a DEL
// does not read every holder of a network with many pods.
func dropUnheld(d *statedir.Dir) error {
	fd, err := unix.Openat(d.Fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), d.Path()) // an offset of its own, not d's
	defer f.Close()
	for {
		entries, err := f.ReadDir(8)
		for _, e := range entries {
			if e.Name() != recordFile && !strings.HasPrefix(e.Name(), ".") {
				return nil
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(entries) == 0 {
			return d.Remove(recordFile)
		}
		if err != nil {
			return err
		}
	}
}

// locked runs fn on the network's directory with its lock held; without
// create, a missing directory means nothing to do.
func (r records) locked(ctx context.Context, network string, create bool, fn func(d *statedir.Dir) error) error {
	if r.root == "" {
		return nil
	}
	d, err := r.dir(network, create)
	if !create && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return recordErr(network, err)
	}
	defer d.Close()
	lock, err := d.Lock(ctx, recordLock, recordWait)
	if err != nil {
		return recordErr(network, err)
	}
	defer lock.Close()
	return recordErr(network, fn(d))
}

func recordErr(network string, err error) error {
	if err == nil {
		return nil
	}
	if types.Code(err) != types.CodeInternal {
		return err
	}
	return types.Errorf(types.ErrIO, "firewall backend of network %q: %w", network, err)
}

func ignoreExist(err error) error {
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// holderName names o's hold.
func holderName(o Owner) string { return o.Plugin + "-" + o.Hash()[:32] }

// netnsID names the calling thread's network namespace: its cookie, or
// its inode where the kernel has no cookies (before 5.14).
func netnsID() (string, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		cookie, cerr := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
		unix.Close(fd)
		if cerr == nil {
			return "c" + strconv.FormatUint(cookie, 10), nil
		}
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return "", err
	}
	return "i" + strconv.FormatUint(st.Ino, 10), nil
}
