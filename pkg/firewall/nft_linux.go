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

// Ensure writes the owner's chains and map elements in one transaction.
func (b *nftBackend) Ensure(ctx context.Context, o Owner, r Rules) error {
	existing, err := nftRead(nftOwnerChains(o))
	if err != nil {
		return err
	}
	script := nftEnsureScript(nftDesired(o, r), existing)
	if needsLocalnetGuard(r) {
		script += strings.Join(nftLocalnetGuard(), "\n") + "\n"
	}
	if script == "" {
		return nil
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
// reference plugins wrote for the same attachment.
func (b *nftBackend) Remove(ctx context.Context, o Owner) error {
	existing, err := nftRead(nftOwnerChains(o))
	if err != nil {
		return err
	}
	var errs []error
	if err := nftDropOrphanElems(existing); err != nil {
		errs = append(errs, err)
	}
	if script := nftRemoveScript(existing, false); script != "" {
		if err := b.run(ctx, script); err != nil {
			errs = append(errs, b.run(ctx, nftRemoveScript(existing, true)))
		}
	}
	errs = append(errs, removeReference(ctx, o, b.run))
	return errors.Join(errs...)
}

// Check compares the owner's chains with the rules r needs.
func (b *nftBackend) Check(ctx context.Context, o Owner, r Rules) error {
	desired := nftDesired(o, r)
	existing, err := nftRead(desiredRefs(desired))
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
	existing, err := nftRead(stale)
	if err != nil {
		return err
	}
	if err := nftDropOrphanElems(existing); err != nil {
		return err
	}
	if script := nftRemoveScript(existing, true); script != "" {
		return b.run(ctx, script)
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

// nftRead fetches the rule comments of the named chains that exist. A
// chain emptied behind our back is returned without comments.
func nftRead(chains []nftChain) ([]nftExisting, error) {
	var out []nftExisting
	var conn *nftables.Conn
	for _, c := range chains {
		rules, err := nlListRules(byte(familyOf[c.table.family]), c.table.name, c.name)
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "listing chain %s %s: %w", c.table, c.name, err)
		}
		if len(rules) == 0 {
			// The dump cannot tell an empty chain from a missing one.
			if conn == nil {
				if conn, err = nftables.New(); err != nil {
					return nil, types.Errorf(types.ErrIO, "netlink to nftables: %w", err)
				}
			}
			table := &nftables.Table{Name: c.table.name, Family: familyOf[c.table.family]}
			if _, err := conn.ListChain(table, c.name); err != nil {
				continue
			}
		}
		e := nftExisting{table: c.table, name: c.name}
		for _, r := range rules {
			e.comments = append(e.comments, r.comment)
		}
		out = append(out, e)
	}
	return out, nil
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
