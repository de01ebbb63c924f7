package iptables

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/types"
)

// GC removes the network's owner chains whose owner is not kept, reading
// the whole nat table once per family (iptables-save -t nat), then the
// network's stale nftables chains.
func (b *Backend) GC(ctx context.Context, plugin, network string, keep []fwapi.Owner) error {
	kept := map[string]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		for _, c := range natchain.OwnerChains(o) {
			kept[c] = true
		}
	}
	var errs []error
	for _, f := range families {
		errs = append(errs, b.w.gc(ctx, f, natchain.NetPrefixes(plugin, network), kept))
	}
	errs = append(errs, nftmodel.GC(plugin, network, keep))
	return errors.Join(errs...)
}

// gc deletes the stale chains of one family and the jumps into them.
// Equivalent to: iptables-save -t nat, then iptables-restore --noflush
func (l *legacy) gc(ctx context.Context, f family, prefixes []string, kept map[string]bool) error {
	t := l.tools(f)
	cmd := exec.CommandContext(ctx, t.save, "-t", "nat")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "%s -t nat: %w: %s", t.save, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(out.String(), "\n")
	stale := map[string]bool{}
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
	names := slices.Sorted(maps.Keys(stale))
	payload := []string{"*nat"}
	for _, c := range names {
		payload = append(payload, ":"+c+" - [0:0]")
	}
	for _, l := range lines {
		if fields := strings.Fields(l); len(fields) > 2 && fields[0] == "-A" && !stale[fields[1]] &&
			stale[fields[len(fields)-1]] && fields[len(fields)-2] == "-j" {
			payload = append(payload, "-D"+strings.TrimPrefix(l, "-A"))
		}
	}
	for _, c := range names {
		payload = append(payload, "-X "+c)
	}
	if err := t.restoreNoflush(ctx, strings.Join(append(payload, "COMMIT"), "\n")+"\n"); err != nil {
		return err
	}
	for _, c := range names {
		forgetChainJumps(f, c)
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

// The expressions are compiled on first use (see listedCommentRE).
var (
	dnatRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )-p (\w+) (?:.* )?--dport (\d+) .*-j DNAT`)
	})
	destRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )(?:-d |-m iprange --dst-range )([^ /-]+)`)
	})
)

// Mapped returns the host ports the owner's DNAT chains forward, read back
// from their rules in each family.
func (b *Backend) Mapped(ctx context.Context, o fwapi.Owner) ([]fwapi.PortMapping, error) {
	c := &call{}
	defer c.close()
	var out []fwapi.PortMapping
	for _, f := range families {
		ms, err := b.w.mapped(ctx, c, o, f)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// mapped parses the owner's DNAT rules from `iptables -t nat -S <chain>`.
func (l *legacy) mapped(ctx context.Context, _ *call, o fwapi.Owner, f family) ([]fwapi.PortMapping, error) {
	rules, err := l.tools(f).list(ctx, natchain.ChainName(natchain.PrefixDNAT, o))
	if errors.Is(err, errNoChain) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []fwapi.PortMapping
	for _, r := range rules {
		m := dnatRE().FindStringSubmatch(r)
		if m == nil {
			continue
		}
		port, _ := strconv.Atoi(m[2])
		out = append(out, fwapi.PortMapping{HostPort: port, Protocol: m[1], HostIP: mappedHost(r)})
	}
	return out, nil
}

// mappedHost returns the host address a DNAT rule matches (-d, or an
// iprange match when the user's conditions hold a -d of their own), nil
// when it matches any; a negated match (a user's condition) is not one.
func mappedHost(rule string) net.IP {
	for _, m := range destRE().FindAllStringSubmatchIndex(rule, -1) {
		if !strings.HasSuffix(rule[:m[0]], "!") {
			return net.ParseIP(rule[m[2]:m[3]])
		}
	}
	return nil
}
