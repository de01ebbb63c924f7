package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// Check compares the owner's chains with the rules r needs, by the digest
// comment of each rule, and checks each entry with iptables -C.
func (b *Backend) Check(ctx context.Context, o fwtypes.Owner, r fwtypes.Rules) error {
	err := b.eachFamily(func(conn *netfilter.Conn, t ipt, v4 bool) error {
		desired := iptDesired(o, r, v4)
		if conn != nil {
			return checkFamilyNL(conn, o, t, desired)
		}
		return checkFamily(ctx, o, t, desired)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	if chains, _ := NFTChains(o, r); len(chains) > 0 {
		return nftchain.Check(o, chains)
	}
	return nil
}

func checkFamily(ctx context.Context, o fwtypes.Owner, t ipt, desired []iptUnit) error {
	for _, u := range desired {
		rules, err := t.list(ctx, u.chain)
		if errors.Is(err, errNoChain) {
			return types.Errorf(fwtypes.ErrMissing, "%s chain %s is missing", t.cmd, u.chain)
		}
		if err != nil {
			return err
		}
		have := map[string]int{}
		for _, r := range rules {
			have[iptRuleComment(r)]++
		}
		for _, r := range u.rules {
			c := iptRuleComment(r)
			if have[c] == 0 {
				return types.Errorf(fwtypes.ErrMissing, "%s rule %q is missing from chain %s", t.cmd, r, u.chain)
			}
			have[c]--
		}
		for _, e := range iptEntries(o, u.chain, u.rules) {
			if err := checkEntry(ctx, o, t, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFamilyNL is checkFamily for iptables-nft, reading over netlink.
// The jumps into an owner chain are counted by the chain's use count (its
// rules plus what leads to it; only our jumps do), so nothing that grows
// with the number of attachments is read.
func checkFamilyNL(conn *netfilter.Conn, o fwtypes.Owner, t ipt, desired []iptUnit) error {
	for _, u := range desired {
		ok, use, err := conn.ChainUse(t.nfproto(), "nat", u.chain)
		if err != nil {
			return types.Errorf(types.ErrIO, "%w", err)
		}
		if !ok {
			return types.Errorf(fwtypes.ErrMissing, "%s chain %s is missing", t.cmd, u.chain)
		}
		rules, err := conn.Rules(t.nfproto(), "nat", u.chain)
		if err != nil {
			return types.Errorf(types.ErrIO, "%w", err)
		}
		have := map[string]int{}
		for _, r := range rules {
			have[r.Comment]++
		}
		for _, r := range u.rules {
			c := iptRuleComment(r)
			if have[c] == 0 {
				return types.Errorf(fwtypes.ErrMissing, "%s rule %q is missing from chain %s", t.cmd, r, u.chain)
			}
			have[c]--
		}
		// The use count covers the chain's own rules and what leads to it.
		refs := int(use) - len(rules)
		if entries := iptEntries(o, u.chain, u.rules); refs < len(entries) {
			return types.Errorf(fwtypes.ErrMissing, "%s: %d of the %d jumps into chain %s are missing (%q in %s)",
				t.cmd, len(entries)-refs, len(entries), u.chain, entries[0].spec, entries[0].parent)
		}
	}
	return nil
}

// splitSpec splits a rule spec into arguments as iptables-restore does:
// double quotes group words, a backslash takes the next rune as it is.
func splitSpec(spec string) []string {
	var out []string
	var cur strings.Builder
	quoted, started, escaped := false, false, false
	for _, r := range spec {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped, started = true, true
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// GC removes the network's owner chains whose owner is not kept. It reads
// the whole nat table once per family (iptables-save -t nat).
func (b *Backend) GC(ctx context.Context, plugin, network string, keep []fwtypes.Owner) error {
	kept := map[string]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		for _, c := range iptOwnerChains(o) {
			kept[c] = true
		}
	}
	var errs []error
	for _, v4 := range []bool{true, false} {
		errs = append(errs, gcFamily(ctx, iptFor(v4), iptNetPrefixes(plugin, network), kept))
	}
	errs = append(errs, nftchain.GC(plugin, network, keep))
	return errors.Join(errs...)
}

func gcFamily(ctx context.Context, t ipt, prefixes []string, kept map[string]bool) error {
	save := strings.TrimSuffix(t.restoreCmd, "-restore") + "-save"
	cmd := exec.CommandContext(ctx, save, "-t", "nat")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "%s -t nat: %w: %s", save, err, strings.TrimSpace(stderr.String()))
	}
	stale := map[string]bool{}
	lines := strings.Split(out.String(), "\n")
	for _, l := range lines {
		if name, ok := strings.CutPrefix(l, ":"); ok {
			name, _, _ = strings.Cut(name, " ")
			if hasAnyPrefix(name, prefixes) && !kept[name] {
				stale[name] = true
			}
		}
	}
	if len(stale) == 0 {
		return nil
	}
	payload := []string{"*nat"}
	for c := range stale {
		payload = append(payload, ":"+c+" - [0:0]")
	}
	for _, l := range lines {
		if fields := strings.Fields(l); len(fields) > 2 && fields[0] == "-A" && !stale[fields[1]] &&
			stale[fields[len(fields)-1]] && fields[len(fields)-2] == "-j" {
			payload = append(payload, "-D"+strings.TrimPrefix(l, "-A"))
		}
	}
	for c := range stale {
		payload = append(payload, "-X "+c)
	}
	if err := t.restore(ctx, strings.Join(append(payload, "COMMIT"), "\n")+"\n"); err != nil {
		return err
	}
	for c := range stale {
		t.forgetChainJumps(c)
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// checkEntry checks that a jump into an owner chain is in place, with the
// owner's tag or the one an earlier version wrote (oldEntryTag). With
// iptables-nft the parent chain is read over netlink (comments only), which
// costs far less than iptables -C translating every rule of the chain;
// otherwise iptables -C runs.
func checkEntry(ctx context.Context, o fwtypes.Owner, t ipt, e iptEntry) error {
	family := byte(unix.NFPROTO_IPV4)
	if t.cmd == "ip6tables" {
		family = unix.NFPROTO_IPV6
	}
	tags := slices.Compact([]string{entryTag(o), oldEntryTag(o)})
	if rules, err := netfilter.ListRules(family, "nat", e.parent); err == nil && len(rules) > 0 {
		for _, r := range rules {
			if slices.Contains(tags, r.Comment) {
				return nil
			}
		}
		return types.Errorf(fwtypes.ErrMissing, "%s jump %q in %s is missing", t.cmd, e.spec, e.parent)
	}
	var errs []error
	for _, tag := range tags {
		spec := strings.Replace(e.spec, iptQuote(tags[0]), iptQuote(tag), 1)
		args := append([]string{"-w", "-t", "nat", "-C", e.parent}, splitSpec(spec)...)
		out, err := exec.CommandContext(ctx, t.cmd, args...).CombinedOutput()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out))))
	}
	return types.Errorf(fwtypes.ErrMissing, "%s jump %q in %s: %w", t.cmd, e.spec, e.parent, errors.Join(errs...))
}
