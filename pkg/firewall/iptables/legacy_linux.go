package iptables

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// legacy is the writer of an iptables-legacy node: one `iptables-restore
// --noflush --wait` payload per family that has something to write, reads
// with `iptables -S <chain>` (the owner's chains only, never the whole
// table), checks of jumps with `iptables -C`, GC with `iptables-save`.
// The iptables-nft writer falls back on one with the iptables-nft tools.
type legacy struct{ v4, v6 tools }

// tools are the commands of one family.
type tools struct{ cmd, restore, save string }

// newLegacy returns the writer running iptables<variant>,
// iptables<variant>-restore and so on: "" for the tools on PATH, whatever
// they are; "-legacy" or "-nft" for one kind.
func newLegacy(variant string) *legacy {
	of := func(base string) tools {
		return tools{cmd: base + variant, restore: base + variant + "-restore", save: base + variant + "-save"}
	}
	return &legacy{v4: of("iptables"), v6: of("ip6tables")}
}

func (l *legacy) tools(f family) tools {
	if f.v4 {
		return l.v4
	}
	return l.v6
}

// errNoChain is returned by list for a chain that does not exist.
var errNoChain = errors.New("no such chain")

// list returns the rules of a chain of table nat as iptables prints them,
// without the "-A <chain> " prefix. Equivalent to: iptables -t nat -S <chain>
func (t tools) list(ctx context.Context, chain string) ([]string, error) {
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
		}
	}
	return rules, nil
}

// restore applies a payload as one transaction.
// Equivalent to: iptables-restore --noflush --wait < payload
func (t tools) restoreNoflush(ctx context.Context, payload string) error {
	cmd := exec.CommandContext(ctx, t.restore, "--noflush", "--wait")
	cmd.Stdin = strings.NewReader(payload)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "%s --noflush: %w: %s", t.restore, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// read returns the chains among names that exist, with their listed rules.
func (t tools) read(ctx context.Context, names []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range names {
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

// existing returns the owner's chains that exist, each with the sources
// of its listed rules (what its jumps match, natchain.Jumps).
func (t tools) existing(ctx context.Context, o fwapi.Owner) (map[string][]string, error) {
	listed, err := t.read(ctx, natchain.ProbeChains(o))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for chain, lines := range listed {
		out[chain] = listedSources(lines)
	}
	return natchain.WithCompanions(o, out), nil
}

// listedSources returns the "-s" networks of listed rules, as
// natchain.Sources does for the rules themselves.
func listedSources(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "-s" && !slices.Contains(out, f[1]) {
			out = append(out, f[1])
		}
	}
	slices.Sort(out)
	return out
}

// listedComment returns the digest comment of a listed rule; compiled on
// first use: most calls never read a rule back as text.
var listedCommentRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`--comment "?(cnisuite [0-9a-f]{8})"?`)
})

func listedComment(line string) string {
	if m := listedCommentRE().FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

func (l *legacy) ensure(ctx context.Context, _ *call, w wanted) error {
	return l.ensureFamily(ctx, w.o, w.f, w.chains, true)
}

// ensureFamily writes the family's desired chains with one
// iptables-restore, after reading the owner's existing chains when read is
// set (the iptables-nft writer knows when there are none).
func (l *legacy) ensureFamily(ctx context.Context, o fwapi.Owner, f family, want []natchain.Chain, read bool) error {
	t := l.tools(f)
	existing := map[string][]string{}
	if read {
		var err error
		if existing, err = t.existing(ctx, o); err != nil {
			return err
		}
	}
	if len(want) == 0 && len(existing) == 0 {
		return nil
	}
	return t.restoreNoflush(ctx, natchain.EnsurePayload(o, want, existing, t.presentJumps(ctx, o, existing)))
}

// presentJumps asks iptables -C which of the jumps the existing chains
// should have are in place, so that the payload adds a jump deleted behind
// our back again (Ensure makes the rules exactly what they must be) and
// does not delete it. Only an Ensure over existing chains pays for it:
// one process per jump. (A failing iptables -C counts as a missing jump:
// if iptables itself fails, so does the payload.)
func (t tools) presentJumps(ctx context.Context, o fwapi.Owner, existing map[string][]string) func(natchain.Jump) bool {
	in := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		for _, j := range natchain.Jumps(o, name, existing[name]) {
			in[j.Parent+" "+j.Rule.String()] = t.checkJump(ctx, o, j) == nil
		}
	}
	return func(j natchain.Jump) bool { return in[j.Parent+" "+j.Rule.String()] }
}

// remove deletes the owner's chains and their jumps with one
// iptables-restore per family that has any, then what more deletes (the
// owner's nftables chains) in a transaction of its own.
func (l *legacy) remove(ctx context.Context, c *call, o fwapi.Owner, more func(*netfilter.Batch) error) error {
	var errs []error
	for _, f := range families {
		errs = append(errs, l.removeFamily(ctx, o, l.tools(f)))
	}
	return errors.Join(append(errs, more(nil))...)
}

func (l *legacy) removeFamily(ctx context.Context, o fwapi.Owner, t tools) error {
	existing, err := t.existing(ctx, o)
	if err != nil {
		return err
	}
	payload := natchain.RemovePayload(o, existing)
	if payload == "" {
		return nil
	}
	err = t.restoreNoflush(ctx, payload)
	if err == nil {
		return nil
	}
	// A jump or the hairpin chain went missing behind our back: delete
	// whatever jumps to the owner's chains.
	if slow := t.removeSlow(ctx, existing); slow != nil {
		return errors.Join(err, slow)
	}
	return nil
}

// removeSlow deletes owner chains after listing the built-in chains for the
// jumps into them.
func (t tools) removeSlow(ctx context.Context, existing map[string][]string) error {
	lines := []string{"*nat"}
	for name := range existing {
		lines = append(lines, ":"+name+" - [0:0]")
	}
	for _, parent := range natchain.Parents {
		rules, err := t.list(ctx, parent)
		if err != nil {
			return err
		}
		for _, r := range rules {
			for name := range existing {
				if strings.HasSuffix(r, " -j "+name) {
					lines = append(lines, "-D "+parent+" "+r)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		lines = append(lines, "-X "+name)
	}
	return t.restoreNoflush(ctx, strings.Join(append(lines, "COMMIT"), "\n")+"\n")
}

// check compares the owner's chains with the wanted ones by the digest
// comment of each rule, and checks each jump with iptables -C.
func (l *legacy) check(ctx context.Context, _ *call, o fwapi.Owner, f family, want []natchain.Chain) error {
	t := l.tools(f)
	for _, c := range want {
		rules, err := t.list(ctx, c.Name)
		if errors.Is(err, errNoChain) {
			return types.Errorf(fwapi.ErrMissing, "%s chain %s is missing", t.cmd, c.Name)
		}
		if err != nil {
			return err
		}
		have := map[string]int{}
		for _, r := range rules {
			have[listedComment(r)]++
		}
		if err := missingRule(t.cmd, c, have); err != nil {
			return err
		}
		for _, j := range natchain.ChainJumps(o, c) {
			if err := t.checkJump(ctx, o, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// missingRule returns ErrMissing naming the first rule of c whose digest
// comment have (comment → count) lacks.
func missingRule(cmd string, c natchain.Chain, have map[string]int) error {
	for _, r := range c.Rules {
		if have[r.Comment()] == 0 {
			return types.Errorf(fwapi.ErrMissing, "%s rule %q is missing from chain %s", cmd, r.String(), c.Name)
		}
		have[r.Comment()]--
	}
	return nil
}

// checkJump runs iptables -C for a jump, with the owner's tag.
func (t tools) checkJump(ctx context.Context, o fwapi.Owner, j natchain.Jump) error {
	r := slices.Clone(j.Rule)
	r[slices.Index(r, "--comment")+1] = natchain.EntryTag(o)
	out, err := exec.CommandContext(ctx, t.cmd, append([]string{"-w", "-t", "nat", "-C", j.Parent}, r...)...).CombinedOutput()
	if err != nil {
		return types.Errorf(fwapi.ErrMissing, "%s jump %q in %s: %w: %s", t.cmd, j.Rule.String(), j.Parent, err, strings.TrimSpace(string(out)))
	}
	return nil
}
