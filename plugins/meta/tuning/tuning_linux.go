package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/undo"
	"cnisuite/pkg/version"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/plugins/meta/tuning/ethconf"
)

// tuner runs the verbs. Its fields are the paths tests point elsewhere.
type tuner struct {
	// allowList is the operator's allow-list file.
	allowList string
	// sysRoot is /proc/sys as seen inside the container network namespace.
	sysRoot string
	// links makes the link calls; nil is netlink in the calling thread's
	// namespace (pkg/linkops).
	links linkops.Links
}

// load reads and validates the configuration and its prevResult, which
// ADD and CHECK require. ADD also enforces the allow-list.
func (t *tuner) load(a *skel.CmdArgs) (*Config, *types.Result, error) {
	c, err := Load(a.StdinData, a.Args)
	if err != nil {
		return nil, nil, err
	}
	c.inEnv(a.Env)
	if err := c.Validate(a.IfName); err != nil {
		return nil, nil, err
	}
	if a.Command == "ADD" {
		al, err := LoadAllowList(t.allowList)
		if err != nil {
			return nil, nil, err
		}
		if err := al.Check(c.Sysctl); err != nil {
			return nil, nil, err
		}
	}
	prev, err := c.RequirePrevResult("tuning", a.Command)
	if err != nil {
		return nil, nil, err
	}
	return c, prev, nil
}

// Add writes the sysctls and sets the link attributes inside the container,
// after saving what it is about to change, and returns prevResult with the
// interface's new MAC and MTU.
func (t *tuner) Add(_ context.Context, a *skel.CmdArgs) (*types.Result, error) {
	c, prev, err := t.load(a)
	if err != nil {
		return nil, err
	}
	settings, err := c.Settings(a.IfName)
	if err != nil {
		return nil, err
	}
	var after linkops.Attrs
	done := a.Log.Step("container")
	err = ns.Do(a.Netns, func() error {
		var err error
		after, err = t.apply(c, a, settings)
		return err
	})
	done()
	if err != nil {
		return nil, ns.CNIError(a.Netns, err)
	}
	return resultFor(prev, a.IfName, c, after), nil
}

// apply runs inside the container namespace in four steps: read the
// link, its features and channels, plan the changes (refusing what the
// driver cannot do), save the original values, write. A failed write
// is undone, and the state file it saved removed if it was new.
func (t *tuner) apply(c *Config, a *skel.CmdArgs, settings []backup.Setting) (linkops.Attrs, error) {
	before, err := t.readLink(a.IfName)
	if err != nil {
		return linkops.Attrs{}, types.Errorf(types.ErrInvalidEnv, "CNI_IFNAME: %w", err)
	}
	eth, err := ethconf.NewPlan(ethSettings(c), a.IfName)
	if err != nil {
		return linkops.Attrs{}, err
	}
	defer eth.Close()
	changes := append(attrChanges(c, before), ethChanges(eth)...)
	if len(settings) == 0 && len(changes) == 0 {
		return before, nil
	}
	if err := checkMTUKeepsIPv6(t.linkOps(), before, c.MTU); err != nil {
		return linkops.Attrs{}, err
	}
	if err := checkMACRestorable(a.IfName, before.MAC, c.HardwareAddr()); err != nil {
		return linkops.Attrs{}, err
	}
	var tree *sysctlTree // opened only for sysctls: each opening is a lookup from /proc/sys
	if len(settings) > 0 {
		if tree, err = openSysctlTree(t.sysRoot); err != nil {
			return linkops.Attrs{}, err
		}
		defer tree.Close()
	}
	st, err := originals(tree, c, before, settings)
	if err != nil {
		return linkops.Attrs{}, err
	}
	snapshotEthtool(st, eth)
	store := backup.Store{Dir: c.DataDir}
	fresh, err := saveState(store, a, st)
	if err != nil {
		return linkops.Attrs{}, err
	}
	a.Log.Debug("sysctls", settings)
	if st.Features != nil || st.Channels != nil {
		a.Log.Debug("ethtool originals", map[string]any{"features": st.Features, "channels": st.Channels})
	}
	if err := t.write(tree, before, settings, st.Sysctl, changes); err != nil {
		if fresh {
			err = errors.Join(err, store.Remove(a.ContainerID, a.IfName))
		}
		return linkops.Attrs{}, err
	}
	if len(changes) == 0 {
		return before, nil // sysctls alone change no attribute the result lists
	}
	return t.readLink(a.IfName)
}

// originals returns the state DEL will restore: the link attributes c
// changes and the current value of every sysctl it writes.
func originals(tree *sysctlTree, c *Config, before linkops.Attrs, settings []backup.Setting) (*backup.State, error) {
	st := &backup.State{Network: c.Name}
	snapshotAttrs(st, c, before)
	var err error
	st.Sysctl, err = readSysctls(tree, settings)
	return st, err
}

// write sets the sysctls, then the link attributes; on failure it undoes
// what it did, last first, and returns the failure with any undo error.
func (t *tuner) write(tree *sysctlTree, link linkops.Attrs, settings, originals []backup.Setting, changes []attrChange) error {
	var rollback undo.Stack
	err := writeSysctls(tree, settings, originals, &rollback)
	for _, ch := range changes {
		if err != nil {
			break
		}
		if err = ch.apply(t.linkOps(), link); err == nil {
			rollback.Push("attribute change", func() error { return ch.undo(t.linkOps(), link) })
		}
	}
	if err != nil {
		return errors.Join(kernelError(err), undoErr(rollback.Run()))
	}
	return nil
}

// saveState writes st, merged under the state of an earlier ADD of the
// same attachment if there is one (it holds the true originals). It reports
// whether the file is new.
func saveState(store backup.Store, a *skel.CmdArgs, st *backup.State) (bool, error) {
	old, err := store.Load(a.ContainerID, a.IfName)
	if err != nil {
		return false, err
	}
	if old != nil {
		old.Merge(st)
		st = old
	}
	return old == nil, store.Save(a.ContainerID, a.IfName, st)
}

// readSysctls returns the current value of every setting's sysctl, once
// per path, checking that none leaves /proc/sys/net.
func readSysctls(tree *sysctlTree, settings []backup.Setting) ([]backup.Setting, error) {
	var out []backup.Setting
	seen := map[string]bool{}
	for _, s := range settings {
		if seen[s.Path] {
			continue
		}
		seen[s.Path] = true
		v, err := tree.Get(s.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, types.Errorf(types.ErrInvalidConfig, "sysctl %q: no such sysctl in the container network namespace", s.Path)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, backup.Setting{Path: s.Path, Value: v})
	}
	return out, nil
}

// writeSysctls writes the settings in order, pushing on rollback the write of
// each original value.
func writeSysctls(tree *sysctlTree, settings, originals []backup.Setting, rollback *undo.Stack) error {
	orig := map[string]string{}
	for _, o := range originals {
		orig[o.Path] = o.Value
	}
	for _, s := range settings {
		if err := tree.Set(s.Path, s.Value); err != nil {
			return fmt.Errorf("sysctl %q: %w", s.Path, err)
		}
		path, value := s.Path, orig[s.Path]
		rollback.Push("sysctl "+path, func() error { return tree.Set(path, value) })
	}
	return nil
}

// kernelError gives a kernel refusal its CNI kind: a value the kernel
// rejects is an invalid configuration, anything else an I/O failure.
func kernelError(err error) error {
	if errors.Is(err, types.ErrInvalidConfig) || errors.Is(err, types.ErrIO) {
		return err
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ERANGE) || errors.Is(err, unix.EADDRNOTAVAIL) {
		return types.Errorf(types.ErrInvalidConfig, "%w", err)
	}
	return types.Errorf(types.ErrIO, "%w", err)
}

// resultFor returns prevResult with the container interface's MAC and MTU
// as they are after ADD.
func resultFor(prev *types.Result, ifName string, c *Config, after linkops.Attrs) *types.Result {
	r := prev.Copy()
	sandboxed := false
	for _, i := range r.Interfaces {
		sandboxed = sandboxed || (i.Name == ifName && i.Sandbox != "")
	}
	for _, i := range r.Interfaces {
		if i.Name != ifName || (sandboxed && i.Sandbox == "") {
			continue
		}
		if c.HardwareAddr() != nil {
			i.Mac = after.MAC.String()
		}
		if c.MTU != 0 && version.AtLeast(c.CNIVersion, "1.1.0") {
			i.Mtu = after.MTU // interface mtu is a key of spec 1.1.0
		}
	}
	return r
}

// undoErr names the undo in the error ADD returns.
func undoErr(err error) error {
	if err != nil {
		return fmt.Errorf("undoing tuning changes: %w", err)
	}
	return nil
}
