package iptables

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/types"
)

// GC removes the network's owner chains whose owner is not kept, reading
// the whole nat table once per family (iptables-save -t nat), then the
// network's stale nftables chains; one netfilter socket serves both.
func (b *Backend) GC(ctx context.Context, plugin, network string, keep []fwapi.Owner) error {
	kept := map[string]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		for _, c := range natchain.OwnerChains(o) {
			kept[c] = true
		}
	}
	c := b.call()
	defer c.close()
	var errs []error
	for _, f := range families {
		errs = append(errs, b.writer().gc(ctx, c, f, natchain.NetPrefixes(plugin, network), kept))
	}
	conn, err := c.socket()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, nftmodel.GC(conn, plugin, network, keep))
	return errors.Join(errs...)
}

// gc deletes the stale chains of one family and the jumps into them.
// Equivalent to: iptables-save -t nat, then iptables-restore --noflush
func (l *legacy) gc(ctx context.Context, _ *call, f family, prefixes []string, kept map[string]bool) error {
	t := l.tools(f)
	cmd := exec.CommandContext(ctx, t.save, "-t", "nat")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return types.Errorf(types.ErrIO, "%s -t nat: %w: %s", t.save, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(out.String(), "\n")
	var chains []string
	for _, l := range lines {
		if name, ok := strings.CutPrefix(l, ":"); ok {
			name, _, _ = strings.Cut(name, " ")
			chains = append(chains, name)
		}
	}
	names := natchain.Stale(chains, prefixes, kept)
	if len(names) == 0 {
		return nil
	}
	stale := map[string]bool{}
	for _, c := range names {
		stale[c] = true
	}
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

// Mapped returns the host ports the owner's DNAT chains forward, read back
// from their rules in each family.
func (b *Backend) Mapped(ctx context.Context, o fwapi.Owner) ([]fwapi.PortMapping, error) {
	c := b.call()
	defer c.close()
	var out []fwapi.PortMapping
	for _, f := range families {
		ms, err := b.writer().mapped(ctx, c, o, f)
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
		if m, ok := natchain.ParseDNAT(r); ok {
			out = append(out, m)
		}
	}
	return out, nil
}
