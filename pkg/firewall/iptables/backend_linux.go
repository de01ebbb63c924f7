package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/reference"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// Backend writes one transaction per family and call: over netlink with
// iptables-nft, else (and as the fallback) one `iptables-restore --noflush
// --wait` payload. It reads only the owner's own chains (over netlink, or
// `iptables -t nat -S <chain>`), never the whole table. Spoof checks are
// bridge-family rules, as is the isolation: NFTChains writes them with
// nftables.
type Backend struct {
	v4, v6 ipt
	// nft is set when iptables is iptables-nft: reads and deletions then
	// go over netlink (see netlink_linux.go).
	nft  bool
	node node
	// restoreOnly makes Ensure write with iptables-restore even with
	// iptables-nft; writes counts how Ensure wrote. Tests compare the two
	// writers and observe the fallbacks with them.
	restoreOnly bool
	writes      struct{ restore, netlink int }
}

// New returns the iptables backend, reading over netlink when iptables is
// iptables-nft.
func New() *Backend { return newOn(theNode) }

func newOn(n node) *Backend {
	return &Backend{v4: iptFor(true), v6: iptFor(false), nft: n.isNFT(), node: n}
}

// ipt runs the tools of one family.
type ipt struct{ cmd, restoreCmd string }

func iptFor(v4 bool) ipt {
	if v4 {
		return ipt{cmd: "iptables", restoreCmd: "iptables-restore"}
	}
	return ipt{cmd: "ip6tables", restoreCmd: "ip6tables-restore"}
}

// errNoChain is returned by list for a chain that does not exist.
var errNoChain = errors.New("no such chain")

// list returns the rules of a chain of table nat without the "-A <chain> "
// prefix. Equivalent to: iptables -t nat -S <chain>
func (t ipt) list(ctx context.Context, chain string) ([]string, error) {
	cmd := exec.CommandContext(ctx, t.cmd, "-w", "-t", "nat", "-S", chain)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return nil, errNoChain
		}
		return nil, types.Errorf(types.ErrIO, "%s -t nat -S %s: %w: %s", t.cmd, chain, err, strings.TrimSpace(stderr.String()))
	}
	var rules []string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "-A "+chain+" "); ok {
			rules = append(rules, rest)
		} else if strings.HasPrefix(line, "-A ") {
			rules = append(rules, line) // a parent listing keeps its lines whole
		}
	}
	return rules, nil
}

// restore applies a payload as one transaction.
// Equivalent to: iptables-restore --noflush --wait < payload
func (t ipt) restore(ctx context.Context, payload string) error {
	cmd := exec.CommandContext(ctx, t.restoreCmd, "--noflush", "--wait")
	cmd.Stdin = strings.NewReader(payload)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "%s --noflush: %w: %s", t.restoreCmd, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// read returns the owner chains that exist with their rules.
func (t ipt) read(ctx context.Context, chains []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range chains {
		rules, err := t.list(ctx, c)
		if errors.Is(err, errNoChain) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[c] = rules
	}
	return out, nil
}

// Usable checks that iptables can be used here: the tools are installed
// and the kernel side answers.
// Backend selection calls it on every call of a configuration that names no
// backend, so it starts no process on almost every node (see usable).
func (b *Backend) Usable(ctx context.Context) error { return b.node.usable(ctx, b.nft) }

// nftConn opens the netlink connection the iptables-nft paths read and
// write with; with iptables-legacy there is none (nil, nil).
func (b *Backend) nftConn() (*netfilter.Conn, error) {
	if !b.nft {
		return nil, nil
	}
	conn, err := netfilter.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	return conn, nil
}

// Ensure writes the owner's chains and entries, one transaction per family
// that has something to write. With iptables-nft, a family whose chains
// and jumps are already in place, or that has nothing of the owner and
// needs nothing, costs a few netlink reads; a write is one netlink
// transaction, and no process starts.
func (b *Backend) Ensure(ctx context.Context, o fwtypes.Owner, r fwtypes.Rules) error {
	err := b.eachFamily(func(conn *netfilter.Conn, t ipt, v4 bool) error {
		return b.ensureFamily(ctx, conn, o, t, r)
	})
	if err != nil {
		return err
	}
	if r.NeedsLocalnetGuard() {
		if err := nftchain.EnsureGuard(); err != nil {
			return fmt.Errorf("%s: localnet guard: %w", o, err)
		}
	}
	return b.ensureNFT(ctx, o, r)
}

// eachFamily opens the netlink connection the iptables-nft paths read and
// delete with (none with iptables-legacy) and runs fn for IPv4, then IPv6.
func (b *Backend) eachFamily(fn func(conn *netfilter.Conn, t ipt, v4 bool) error) error {
	conn, err := b.nftConn()
	if err != nil {
		return err
	}
	if conn != nil {
		defer conn.Close()
	}
	for _, v4 := range []bool{true, false} {
		if err := fn(conn, iptFor(v4), v4); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) ensureFamily(ctx context.Context, conn *netfilter.Conn, o fwtypes.Owner, t ipt, r fwtypes.Rules) error {
	desired := iptDesired(o, r, t.v4())
	if conn == nil {
		return b.ensureRestore(ctx, o, t, desired, true)
	}
	done, st, err := t.inPlaceNL(conn, o, desired)
	if err != nil {
		return types.Errorf(types.ErrIO, "%s: %w", o, err)
	}
	if done {
		return nil
	}
	if !b.restoreOnly && !hasConditions(r, t.v4()) {
		if err := t.ensureNL(conn, o, desired, st); err == nil {
			b.writes.netlink++
			return nil
		}
		// Not encodable, no table nat or built-in chain yet, or a
		// concurrent writer: iptables-restore, once.
	}
	// Chains to rewrite: their rules are needed as text.
	return b.ensureRestore(ctx, o, t, desired, len(st.present) > 0)
}

// hasConditions reports whether the user's free-form iptables conditions
// apply to the family: only iptables-restore can write them.
func hasConditions(r fwtypes.Rules, v4 bool) bool {
	if r.PortMaps == nil {
		return false
	}
	if v4 {
		return len(r.PortMaps.ConditionsV4) > 0
	}
	return len(r.PortMaps.ConditionsV6) > 0
}

// ensureRestore writes the family's desired chains with one
// iptables-restore, after reading the owner's existing chains as text when
// read is set.
func (b *Backend) ensureRestore(ctx context.Context, o fwtypes.Owner, t ipt, desired []iptUnit, read bool) error {
	existing := map[string][]string{}
	if read {
		var err error
		if existing, err = t.read(ctx, iptProbeChains(o)); err != nil {
			return err
		}
		existing = withCompanions(o, existing)
	}
	if len(desired) == 0 && len(existing) == 0 {
		return nil
	}
	b.writes.restore++
	t.forgetJumps(o) // iptables-restore does not say which handles it gave
	if err := t.restore(ctx, iptEnsurePayload(o, desired, existing)); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// iptProbeChains returns the chains whose state tells what an owner holds:
// a bridge owner's masquerade chain; a portmap owner's DNAT chain, whose
// hairpin chain always exists alongside.
func iptProbeChains(o fwtypes.Owner) []string {
	if o.Plugin == fwtypes.PluginPortmap {
		return []string{ChainName(PrefixDNAT, o)}
	}
	return []string{ChainName(PrefixMasq, o)}
}

// withCompanions adds the hairpin chain to a portmap owner's existing
// chains, since it was created and must be deleted with the DNAT chain.
func withCompanions(o fwtypes.Owner, existing map[string][]string) map[string][]string {
	if _, ok := existing[ChainName(PrefixDNAT, o)]; ok {
		existing[ChainName(PrefixHairpin, o)] = nil
	}
	return existing
}

// ensureNFT writes the owner's nftables chains, which iptables cannot
// express: the spoof check and the isolation, in one nftables transaction.
func (b *Backend) ensureNFT(ctx context.Context, o fwtypes.Owner, r fwtypes.Rules) error {
	chains, skels := NFTChains(o, r)
	if len(chains) == 0 {
		return nil
	}
	return nftchain.Ensure(ctx, o, chains, skels)
}

// Remove deletes the owner's chains and entries, then the reference
// plugins' rules of the attachment and the owner's spoof check. With
// iptables-nft all of it is one netlink transaction; otherwise one
// iptables-restore per family that has chains of the owner.
func (b *Backend) Remove(ctx context.Context, o fwtypes.Owner) error {
	defer func() {
		for _, v4 := range []bool{true, false} {
			iptFor(v4).forgetJumps(o)
		}
	}()
	if b.nft {
		// The recorded jumps first; if they were not all of them, the
		// kernel refused to delete a chain still in use: the dump.
		for _, recorded := range []bool{true, false} {
			if err := b.removeNL(o, recorded); err == nil {
				return nil
			}
		}
		// Something changed under us: the universal path below.
	}
	var errs []error
	for _, v4 := range []bool{true, false} {
		errs = append(errs, b.removeFamily(ctx, o, iptFor(v4)))
	}
	errs = append(errs, removeNFT(o, nil)) // the spoof check, the reference plugins' rules
	return errors.Join(errs...)
}

// removeNFT deletes the owner's chains in our nftables tables (its spoof
// check; anything an earlier nftables backend left) and what the reference
// plugins wrote for the attachment, in one netlink transaction with extra.
func removeNFT(o fwtypes.Owner, extra *netfilter.Batch) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	return removeNFTOn(conn, o, extra)
}

func removeNFTOn(conn *netfilter.Conn, o fwtypes.Owner, extra *netfilter.Batch) error {
	return nftchain.Remove(conn, o, extra, func(batch *netfilter.Batch) error {
		return reference.Delete(conn, o, batch)
	})
}

func (b *Backend) removeNL(o fwtypes.Owner, recorded bool) error {
	conn, err := netfilter.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.Close()
	batch := &netfilter.Batch{}
	for _, v4 := range []bool{true, false} {
		if err := iptFor(v4).removeNL(conn, o, batch, recorded); err != nil {
			return types.Errorf(types.ErrIO, "%s: %w", o, err)
		}
	}
	return removeNFTOn(conn, o, batch)
}

func (b *Backend) removeFamily(ctx context.Context, o fwtypes.Owner, t ipt) error {
	existing, err := t.read(ctx, iptProbeChains(o))
	if err != nil {
		return err
	}
	existing = withCompanions(o, existing)
	payload := iptRemovePayload(o, existing)
	if payload == "" {
		return nil
	}
	if err := t.restore(ctx, payload); err != nil {
		// An entry or the hairpin chain went missing behind our back:
		// fall back to deleting whatever jumps to the owner's chains.
		return removeSlow(ctx, t, existing)
	}
	return nil
}

// removeSlow deletes owner chains after listing the built-in chains for the
// jumps into them.
func removeSlow(ctx context.Context, t ipt, existing map[string][]string) error {
	lines := []string{"*nat"}
	for _, parent := range []string{"PREROUTING", "OUTPUT", "POSTROUTING"} {
		rules, err := t.list(ctx, parent)
		if err != nil {
			return err
		}
		for _, r := range rules {
			for chain := range existing {
				if strings.HasSuffix(r, " -j "+chain) {
					lines = append(lines, "-D"+strings.TrimPrefix(r, "-A"))
				}
			}
		}
	}
	var declared []string
	for chain := range sortedChains(existing) {
		declared = append(declared, ":"+chain+" - [0:0]")
		lines = append(lines, "-X "+chain)
	}
	lines = append(lines[:1], append(declared, lines[1:]...)...)
	return t.restore(ctx, strings.Join(append(lines, "COMMIT"), "\n")+"\n")
}
