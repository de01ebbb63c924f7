package hostlocal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/ipam/host-local/allocator"
	"cnisuite/plugins/ipam/host-local/store"
)

// Plugin is host-local: its verbs wired to the protocol. The command in the
// directory above runs it; bridge may run it in its own process (see
// pkg/invoke, InProcess).
func Plugin() *skel.Plugin {
	return &skel.Plugin{Name: "host-local", Add: cmdAdd, Check: cmdCheck, Del: cmdDel, GC: cmdGC, Status: cmdStatus}
}

func attachmentOf(a *skel.CmdArgs) types.Attachment {
	return types.Attachment{ContainerID: a.ContainerID, IfName: a.IfName}
}

// cmdAdd leases one address per range set, under one lock, all or nothing.
func cmdAdd(ctx context.Context, a *skel.CmdArgs) (*types.Result, error) {
	conf, err := loadConfig(a.StdinData, a.Args)
	if err != nil {
		return nil, err
	}
	dns, err := loadDNS(conf.ResolvConf)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(conf.net.dataDir(a.Env), conf.Name)
	if err != nil {
		return nil, err
	}
	done := a.Log.Step("lock")
	err = st.Lock(ctx)
	done()
	if err != nil {
		return nil, err
	}
	done = a.Log.Step("allocate")
	who := attachmentOf(a)
	leases, err := allocator.Allocate(st, conf.Sets, allocator.Request{Attachment: who, Requested: conf.Requested})
	if err == nil {
		if err = st.Commit(); err != nil {
			err = errors.Join(err, allocator.Release(st, who))
		}
	}
	done()
	if err = errors.Join(err, st.Unlock()); err != nil {
		return nil, err
	}
	return buildResult(leases, conf.Routes, dns), nil
}

// buildResult is the IPAM result: every address leased, with its gateway and
// no interface index, the configured routes, the DNS of resolvConf.
func buildResult(leases []allocator.Lease, routes []*types.Route, dns types.DNS) *types.Result {
	r := &types.Result{Routes: routes, DNS: dns}
	for _, l := range leases {
		r.IPs = append(r.IPs, &types.IPConfig{Address: l.Address, Gateway: l.Gateway})
	}
	return r
}

// openExisting opens the store of the network named in stdin; ok is false
// when its directory does not exist, i.e. nothing was ever leased.
func openExisting(n *netConf, env []string) (st *store.Store, ok bool, err error) {
	st, err = store.Open(n.dataDir(env), n.Name)
	if err != nil {
		return nil, false, err
	}
	ok, err = st.Exists()
	return st, ok, err
}

// cmdDel releases every lease of the attachment in every set. It reads only
// the network name and dataDir, so that a DEL succeeds even with ranges
// that no longer validate; releasing nothing is success.
func cmdDel(ctx context.Context, a *skel.CmdArgs) error {
	return withExistingStore(ctx, a, true, func(_ *netConf, st *store.Store) error {
		return allocator.Release(st, attachmentOf(a))
	})
}

// withExistingStore runs fn with the network's store locked; a network
// without a directory yet has nothing to release and fn does not run.
func withExistingStore(ctx context.Context, a *skel.CmdArgs, releaseOnly bool, fn func(*netConf, *store.Store) error) error {
	n, err := parseConf(a.StdinData)
	if err != nil {
		return err
	}
	st, ok, err := openExisting(n, a.Env)
	if err != nil || !ok {
		return err
	}
	if releaseOnly {
		st.SetReleaseOnly()
	}
	done := a.Log.Step("lock")
	err = st.Lock(ctx)
	done()
	if err != nil {
		return err
	}
	defer a.Log.Step("leases")()
	return errors.Join(fn(n, st), st.Unlock())
}

// cmdCheck verifies that every address of prevResult that lies in one of the
// configured subnets is leased to this attachment; without such addresses,
// that the attachment holds some lease.
func cmdCheck(ctx context.Context, a *skel.CmdArgs) error {
	conf, err := loadConfig(a.StdinData, a.Args)
	if err != nil {
		return err
	}
	prev, err := conf.net.PrevResult()
	if err != nil {
		return err
	}
	who := attachmentOf(a)
	st, ok, err := openExisting(conf.net, a.Env)
	if err != nil {
		return err
	}
	if !ok {
		return types.Errorf(types.ErrUnknownContainer, "no address is leased to container %q interface %q on network %q", who.ContainerID, who.IfName, conf.Name)
	}
	if err := st.Lock(ctx); err != nil {
		return err
	}
	return errors.Join(checkLeases(st, conf, prev, who), st.Unlock())
}

func checkLeases(st *store.Store, conf *config, prev *types.Result, who types.Attachment) error {
	checked := 0
	for _, ipc := range prevIPs(prev) {
		ip := ipc.Address.IP
		if !inSubnets(conf.Sets, ip) {
			continue
		}
		checked++
		owner, ok, err := st.Owner(ip)
		switch {
		case err != nil:
			return err
		case !ok:
			return types.Errorf(types.ErrUnknownContainer, "prevResult address %s is not leased (no file %s)", ip, filepath.Join(st.Dir(), ip.String()))
		case owner != who && owner != (types.Attachment{ContainerID: who.ContainerID}):
			return types.Errorf(types.ErrUnknownContainer, "prevResult address %s is leased to container %q interface %q, not to container %q interface %q",
				ip, owner.ContainerID, owner.IfName, who.ContainerID, who.IfName)
		}
	}
	if checked > 0 {
		return nil
	}
	held, err := st.Leases(who)
	if err == nil && len(held) == 0 {
		err = types.Errorf(types.ErrUnknownContainer, "no address is leased to container %q interface %q on network %q", who.ContainerID, who.IfName, conf.Name)
	}
	return err
}

func prevIPs(prev *types.Result) []*types.IPConfig {
	if prev == nil {
		return nil
	}
	return prev.IPs
}

func inSubnets(sets []allocator.RangeSet, ip net.IP) bool {
	for _, set := range sets {
		for _, r := range set {
			if r.Subnet.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// cmdGC releases every lease of the network whose attachment is not listed
// as valid. Both spellings of the key are read. An empty or null list, or
// no key at all, names no valid attachment and releases everything: libcni
// leaves the key out when its caller passes no attachments (cnitool gc),
// meaning every attachment it does not know of is stale; the bridge,
// tuning and portmap plugins read it the same way.
func cmdGC(ctx context.Context, a *skel.CmdArgs) error {
	return withExistingStore(ctx, a, false, func(n *netConf, st *store.Store) error {
		_, err := st.GC(n.GCAttachments())
		return err
	})
}

// cmdStatus reports code 50 when an ADD could not succeed: the data
// directory is not writable, or a range set has no free address.
func cmdStatus(_ context.Context, a *skel.CmdArgs) error {
	n, err := parseConf(a.StdinData)
	if err != nil {
		return err
	}
	sets, err := n.rangeSets()
	if err != nil {
		return err
	}
	st, err := store.Open(n.dataDir(a.Env), n.Name)
	if err != nil {
		return err
	}
	// Only read: closing changes nothing.
	defer func() { _ = st.Close() }()
	if err := writable(st.Dir()); err != nil {
		return types.Errorf(types.ErrNotAvailable, "cannot allocate: %w", err)
	}
	for i, set := range sets {
		// Read without the lock: a hint of where ADD would look next, and
		// last_reserved_ip.<n> is only ever replaced atomically.
		last, err := st.LastReserved(i)
		if err != nil {
			return types.Errorf(types.ErrNotAvailable, "cannot read leases: %w", err)
		}
		free, err := allocator.HasFree(st, set, last)
		if err != nil {
			return types.Errorf(types.ErrNotAvailable, "cannot read leases: %w", err)
		}
		if !free {
			return types.Errorf(types.ErrNotAvailable, "range set %d (%s) has no free address", i, set)
		}
	}
	return nil
}

// writable checks that dir, or its nearest existing parent, can be written.
func writable(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		_, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(p) != p {
			continue
		}
		if err != nil {
			return fmt.Errorf("data directory %s: %w", p, err)
		}
		if err := unix.Access(p, unix.W_OK); err != nil {
			return fmt.Errorf("data directory %s is not writable: %w", p, err)
		}
		return nil
	}
}
