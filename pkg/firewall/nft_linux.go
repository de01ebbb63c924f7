package firewall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

// nftBackend writes with one `nft -f -` transaction per call and reads
// over netlink, one request per owner chain, so neither grows with the
// number of attachments on the node.
type nftBackend struct {
	nftPath string
}

func newNFTables() *nftBackend { return &nftBackend{nftPath: "nft"} }

var familyOf = map[string]nftables.TableFamily{
	"ip":     nftables.TableFamilyIPv4,
	"ip6":    nftables.TableFamilyIPv6,
	"inet":   nftables.TableFamilyINet,
	"bridge": nftables.TableFamilyBridge,
}

// Usable checks that nft runs and the kernel answers nftables requests.
func (b *nftBackend) Usable(ctx context.Context) error {
	if _, err := exec.LookPath(b.nftPath); err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: %w", err)
	}
	conn, err := nftables.New()
	if err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: %w", err)
	}
	if _, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4); err != nil {
		return types.Errorf(types.ErrNotAvailable, "nftables backend: listing tables: %w", err)
	}
	return nil
}

// Ensure writes the owner's chains and map elements in one transaction:
// over netlink when every rule has a kernel form, else with nft -f -.
func (b *nftBackend) Ensure(ctx context.Context, o Owner, r Rules) error {
	desired := nftDesired(o, r)
	var skels []nftSkel
	seen := map[nftTable]bool{}
	for _, c := range desired {
		if !seen[c.table] {
			seen[c.table] = true
			skels = append(skels, nftSkeleton(c.table))
		}
	}
	if needsLocalnetGuard(r) {
		skels = append(skels, nftLocalnetSkel())
	}
	if !buildable(desired) {
		return b.ensureScript(ctx, o, desired, skels)
	}
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	existing, err := conn.readChains(nftOwnerChains(o))
	if err != nil {
		return err
	}
	for _, safe := range []bool{false, true} {
		batch := &nlBatch{}
		if err = conn.ensureSkeletons(batch, skels); err != nil {
			return err
		}
		batch.ensureBatch(desired, existing, safe)
		if err = conn.apply(batch); err == nil || isConflict(err) {
			break
		}
	}
	if isConflict(err) {
		return types.Errorf(ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
	}
	if err != nil {
		return types.Errorf(types.ErrIO, "%s: %w", o, err)
	}
	return nil
}

// ensureGuard writes the localnet guard unless it is in place.
func (b *nftBackend) ensureGuard() error {
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	batch := &nlBatch{}
	if err := conn.ensureSkeletons(batch, []nftSkel{nftLocalnetSkel()}); err != nil {
		return err
	}
	if err := conn.apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "localnet guard: %w", err)
	}
	return nil
}

// ensureScript is Ensure through nft -f -, for rules with user conditions
// or spoof checks, whose kernel form only nft builds.
func (b *nftBackend) ensureScript(ctx context.Context, o Owner, desired []nftChain, skels []nftSkel) error {
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	existing, err := conn.readChains(nftOwnerChains(o))
	intact := map[nftTable]bool{} // non-nil: identical chains keep their rules
	for _, s := range skels {
		if err == nil {
			intact[s.table], err = conn.skeletonIntact(s)
		}
	}
	conn.close()
	if err != nil {
		return err
	}
	script := nftEnsureScriptSkipping(desired, existing, intact)
	for _, s := range skels {
		if s.table == localnetGuardT && !intact[s.table] {
			script += strings.Join(s.lines(), "\n") + "\n"
		}
	}
	if err := b.run(ctx, script); err != nil {
		if strings.Contains(err.Error(), "File exists") {
			return types.Errorf(ErrConflict, "%s: a host port, address or interface is already taken by another attachment: %w", o, err)
		}
		return err
	}
	return nil
}

// Remove deletes the owner's chains and map elements, and what the
// reference plugins wrote for the same attachment, in one netlink
// transaction.
func (b *nftBackend) Remove(ctx context.Context, o Owner) error {
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	return b.removeWith(ctx, conn, o, nil)
}

// removeWith is Remove on conn; the messages of extra (another backend's
// deletions) join the same transaction.
func (b *nftBackend) removeWith(ctx context.Context, conn *nlConn, o Owner, extra *nlBatch) error {
	existing, err := conn.readChains(nftOwnerChains(o))
	if err != nil {
		return err
	}
	if err := nftDropOrphanElems(existing); err != nil {
		return err
	}
	all := &nlBatch{}
	if extra != nil {
		all.msgs, all.err, all.deleting = append(all.msgs, extra.msgs...), extra.err, extra.deleting
	}
	for _, e := range existing {
		all.removeChain(e, false)
	}
	refErr := removeReference(ctx, conn, o, all)
	if err := conn.apply(all); err == nil {
		return refErr
	}
	// An element or a rule went away behind our back: the safe form of
	// our own part, then the rest again.
	safe := &nlBatch{}
	for _, e := range existing {
		safe.removeChain(e, true)
	}
	var errs []error
	if err := conn.apply(safe); err != nil {
		errs = append(errs, types.Errorf(types.ErrIO, "%s: %w", o, err))
	}
	rest := &nlBatch{}
	if extra != nil {
		rest.msgs, rest.err, rest.deleting = extra.msgs, extra.err, extra.deleting
	}
	errs = append(errs, removeReference(ctx, conn, o, rest))
	if err := conn.apply(rest); err != nil {
		errs = append(errs, types.Errorf(types.ErrIO, "%s: %w", o, err))
	}
	return errors.Join(errs...)
}

// Check compares the owner's chains with the rules r needs.
func (b *nftBackend) Check(ctx context.Context, o Owner, r Rules) error {
	desired := nftDesired(o, r)
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	existing, err := conn.readChains(desiredRefs(desired))
	if err != nil {
		return err
	}
	if err := nftCompare(desired, existing); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// GC removes the network's owner chains whose owner is not kept.
func (b *nftBackend) GC(ctx context.Context, plugin, network string, keep []Owner) error {
	stale, err := nftStale(plugin, network, keep)
	if err != nil {
		return err
	}
	conn, err := dialNL()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	existing, err := conn.readChains(stale)
	if err != nil {
		return err
	}
	if err := nftDropOrphanElems(existing); err != nil {
		return err
	}
	batch := &nlBatch{}
	for _, e := range existing {
		batch.removeChain(e, true)
	}
	if err := conn.apply(batch); err != nil {
		return types.Errorf(types.ErrIO, "GC of network %q: %w", network, err)
	}
	return nil
}

// run applies a script as one transaction: nft -f -.
func (b *nftBackend) run(ctx context.Context, script string) error {
	return runNFT(ctx, b.nftPath, script)
}

func runNFT(ctx context.Context, path, script string) error {
	cmd := exec.CommandContext(ctx, path, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "nft -f -: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

func desiredRefs(cs []nftChain) []nftChain {
	out := make([]nftChain, len(cs))
	for i, c := range cs {
		out[i] = nftChain{table: c.table, name: c.name}
	}
	return out
}

// nftDropOrphanElems deletes, over netlink, the map elements leading to
// existing chains whose rules no longer say which elements they have (a
// chain flushed behind our back), so that the chains can be deleted.
func nftDropOrphanElems(existing []nftExisting) error {
	var conn *nftables.Conn
	for _, e := range existing {
		if len(e.comments) > 0 {
			continue
		}
		var err error
		if conn == nil {
			if conn, err = nftables.New(); err != nil {
				return types.Errorf(types.ErrIO, "netlink to nftables: %w", err)
			}
		}
		table := &nftables.Table{Name: e.table.name, Family: familyOf[e.table.family]}
		sets, err := conn.GetSets(table)
		if err != nil {
			return types.Errorf(types.ErrIO, "listing maps of %s: %w", e.table, err)
		}
		for _, set := range sets {
			elems, err := conn.GetSetElements(set)
			if err != nil {
				return types.Errorf(types.ErrIO, "listing map %s: %w", set.Name, err)
			}
			var drop []nftables.SetElement
			for _, el := range elems {
				if verdictChain(el.Val) == e.name {
					drop = append(drop, nftables.SetElement{Key: el.Key})
				}
			}
			if len(drop) > 0 {
				if err := conn.SetDeleteElements(set, drop); err != nil {
					return types.Errorf(types.ErrIO, "deleting elements of %s: %w", set.Name, err)
				}
			}
		}
	}
	if conn == nil {
		return nil
	}
	if err := conn.Flush(); err != nil {
		return types.Errorf(types.ErrIO, "deleting orphan map elements: %w", err)
	}
	return nil
}

// nftCompare reports the first desired rule missing from the kernel.
func nftCompare(desired []nftChain, existing []nftExisting) error {
	have := map[string]map[string]int{}
	for _, e := range existing {
		have[e.id()] = map[string]int{}
		for _, c := range e.comments {
			have[e.id()][c]++
		}
	}
	for _, c := range desired {
		got, ok := have[c.id()]
		if !ok {
			return types.Errorf(ErrMissing, "chain %s %s is missing", c.table, c.name)
		}
		for _, r := range c.rules {
			if got[r.comment()] == 0 {
				return types.Errorf(ErrMissing, "rule %q is missing from chain %s %s", r.text, c.table, c.name)
			}
			got[r.comment()]--
		}
	}
	return nil
}

// nftStale lists the network's owner chains not belonging to kept owners.
func nftStale(plugin, network string, keep []Owner) ([]nftChain, error) {
	conn, err := nftables.New()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "netlink to nftables: %w", err)
	}
	kept := map[string]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		for _, c := range nftOwnerChains(o) {
			kept[c.id()] = true
		}
	}
	var out []nftChain
	for _, t := range nftTables {
		chains, err := conn.ListChainsOfTableFamily(familyOf[t.family])
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "listing chains: %w", err)
		}
		for _, ch := range chains {
			c := nftChain{table: t, name: ch.Name}
			if ch.Table.Name == t.name && isNetChain(ch.Name, plugin, network) && !kept[c.id()] {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func isNetChain(name, plugin, network string) bool {
	for _, p := range []string{nftPrefixMasq, nftPrefixDNAT, nftPrefixHairpin, nftPrefixSpoof} {
		if strings.HasPrefix(name, nftNetPrefix(p, plugin, network)) {
			return true
		}
	}
	return false
}

// verdictChain returns the chain of a verdict-map element's data (the
// nested NFTA_VERDICT_* attributes), or "".
func verdictChain(val []byte) string {
	ad, err := netlink.NewAttributeDecoder(val)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_VERDICT_CHAIN {
			return ad.String()
		}
	}
	return ""
}
