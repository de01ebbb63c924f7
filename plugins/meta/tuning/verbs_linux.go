package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"cnisuite/pkg/linkops"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/backup"
)

// errDrift marks a CHECK that found a value other than the configured one.
var errDrift = errors.New("tuning drift")

// Check reads back every sysctl and link attribute inside the container
// and fails, naming each one, when any differs from the configuration.
func (t *tuner) Check(_ context.Context, a *skel.CmdArgs) error {
	c, _, err := t.load(a)
	if err != nil {
		return err
	}
	settings, err := c.Settings(a.IfName)
	if err != nil {
		return err
	}
	err = ns.Do(a.Netns, func() error {
		return errors.Join(t.checkSysctls(settings), t.checkAttrs(c, a.IfName), checkEthtool(c, a.IfName))
	})
	return ns.CNIError(a.Netns, err)
}

func (t *tuner) checkSysctls(settings []backup.Setting) error {
	if len(settings) == 0 {
		return nil
	}
	tree, err := openSysctlTree(t.sysRoot)
	if err != nil {
		return err
	}
	defer tree.Close()
	var errs []error
	for _, s := range settings {
		got, err := tree.Get(s.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// The kernel prints vectors tab-separated; compare the fields.
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(s.Value), " ") {
			errs = append(errs, fmt.Errorf("%w: sysctl %q is %q, want %q", errDrift, s.Path, got, s.Value))
		}
	}
	return errors.Join(errs...)
}

func (t *tuner) checkAttrs(c *Config, ifName string) error {
	got, err := t.readLink(ifName)
	if err != nil {
		return err
	}
	var errs []error
	drift := func(what string, got, want any) {
		errs = append(errs, fmt.Errorf("%w: %s of %q is %v, want %v", errDrift, what, ifName, got, want))
	}
	// Hardware addresses compare as bytes, so the case of the config's
	// spelling does not matter.
	if mac := c.HardwareAddr(); mac != nil && !strings.EqualFold(got.MAC.String(), mac.String()) {
		drift("mac", got.MAC, mac)
	}
	if c.MTU != 0 && got.MTU != c.MTU {
		drift("mtu", got.MTU, c.MTU)
	}
	if c.Promisc != nil && got.Promisc != *c.Promisc {
		drift("promisc", got.Promisc, *c.Promisc)
	}
	if c.Allmulti != nil && got.Allmulti != *c.Allmulti {
		drift("allmulti", got.Allmulti, *c.Allmulti)
	}
	if c.TxQLen != nil && got.TxQLen != *c.TxQLen {
		drift("txQLen", got.TxQLen, *c.TxQLen)
	}
	return errors.Join(errs...)
}

// Del puts back, from the state file, what ADD changed, then removes the
// file. A missing state file, netns or link leaves nothing to put back; a
// value the kernel refuses is reported on stderr and does not fail DEL, so
// that a container can always be torn down.
func (t *tuner) Del(_ context.Context, a *skel.CmdArgs) error {
	c, err := loadForState(a)
	if err != nil {
		return err
	}
	store := backup.Store{Dir: c.DataDir}
	st, err := store.Load(a.ContainerID, a.IfName)
	switch {
	case errors.Is(err, statedir.ErrLink):
		// We only ever write state files by rename: a link under the
		// name is someone else's, and holds nothing of ours to restore.
		warn(a.Stderr, "no state of ours to restore, leaving what is there: %v", err)
		return nil
	case errors.Is(err, types.ErrDecoding):
		warn(a.Stderr, "discarding unreadable state: %v", err)
	case err != nil:
		return err
	}
	if st != nil && a.Netns != "" {
		err := ns.Do(a.Netns, func() error { return t.restore(st, a.IfName) })
		if err != nil && !errors.Is(err, ns.ErrNotExist) {
			warn(a.Stderr, "could not restore everything: %v", err)
		}
	}
	return store.Remove(a.ContainerID, a.IfName)
}

// restoreSysctls writes the saved values back, latest first; a missing
// sysctl is skipped.
func (t *tuner) restoreSysctls(saved []backup.Setting, ifName string) error {
	tree, err := openSysctlTree(t.sysRoot)
	if err != nil {
		return err
	}
	defer tree.Close()
	var errs []error
	for i := len(saved) - 1; i >= 0; i-- {
		s := saved[i]
		if _, err := SysctlPath(s.Path, ifName); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := tree.Set(s.Path, s.Value); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restore runs inside the container namespace: sysctls latest first, then
// the link attributes. A missing link or sysctl is skipped.
func (t *tuner) restore(st *backup.State, ifName string) error {
	var errs []error
	if len(st.Sysctl) > 0 {
		errs = append(errs, t.restoreSysctls(st.Sysctl, ifName))
	}
	link, err := t.linkOps().Get(ifName)
	switch {
	case errors.Is(err, linkops.ErrNotFound):
	case err != nil:
		errs = append(errs, err)
	default:
		errs = append(errs, restoreAttrs(t.linkOps(), link, st), restoreEthtool(st, ifName))
	}
	return errors.Join(errs...)
}

func warn(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, "tuning: "+format+"\n", a...)
	}
}

// GC removes the state files of this network's attachments that are not
// among the valid ones.
func (t *tuner) GC(_ context.Context, a *skel.CmdArgs) error {
	c, err := loadForState(a)
	if err != nil {
		return err
	}
	return backup.Store{Dir: c.DataDir}.GC(c.Name, c.GCAttachments())
}

// loadForState reads the configuration of a call that only reads and
// removes state files (DEL, GC): its dataDir must be absolute.
func loadForState(a *skel.CmdArgs) (*Config, error) {
	c, err := Load(a.StdinData, a.Args)
	if err != nil {
		return nil, err
	}
	c.inEnv(a.Env)
	if !filepath.IsAbs(c.DataDir) {
		return nil, types.Errorf(types.ErrInvalidConfig, "dataDir %q: must be an absolute path", c.DataDir)
	}
	return c, nil
}

// Status reports success: tuning needs nothing to be ready.
func (t *tuner) Status(context.Context, *skel.CmdArgs) error {
	return nil
}
