package firewall

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/types"
)

// Fake is an in-memory Backend for tests: it records the rules of every
// owner, Dumps the text the backend of kind Kind would write for them
// (render, the text the golden files hold) and, when asked, refuses what
// the nftables backend refuses.
type Fake struct {
	// Kind is KindNFTables (the default) or KindIPTables: the rendering
	// Dump uses.
	Kind string
	// Err, when set, is returned by every call.
	Err error
	// EnsureErr, when set, is returned by Ensure alone: a write that
	// fails on a backend otherwise usable.
	EnsureErr error
	// Conflicts makes Ensure fail with ErrConflict, as the nftables
	// backend does, when another owner holds a host port (protocol, port
	// or range overlapping the rules', host address, per family) or a
	// masqueraded address the rules need. The iptables kind never
	// conflicts: the iptables backend itself allows duplicates. (The node's
	// host port claims, which New puts in front of either backend, are not
	// part of the fake.)
	Conflicts bool

	mu    sync.Mutex
	state map[Owner]Rules
	calls []string
}

// NewFake returns an empty fake rendering like the backend of kind
// (KindNFTables or KindIPTables).
func NewFake(kind string) *Fake { return &Fake{Kind: kind, state: map[Owner]Rules{}} }

func (f *Fake) record(format string, a ...any) error {
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
	return f.Err
}

// Ensure records r as the owner's rules.
func (f *Fake) Ensure(_ context.Context, o Owner, r Rules) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ensure %s", o); err != nil {
		return err
	}
	if f.EnsureErr != nil {
		return f.EnsureErr
	}
	if f.Conflicts && f.Kind != KindIPTables {
		want := heldKeys(r)
		for other, rules := range f.state {
			if other == o {
				continue
			}
			for _, k := range heldKeys(rules) {
				for _, w := range want {
					if k.overlaps(w) {
						return types.Errorf(ErrConflict, "%s: %s is held by %s", o, k, other)
					}
				}
			}
		}
	}
	f.state[o] = r
	return nil
}

// heldKey is what an owner's rules hold exclusively with nftables: a
// masqueraded address, or host ports (first to last) of a protocol, host
// address ("*": every one) and family.
type heldKey struct {
	what        string
	first, last int
}

func (k heldKey) overlaps(o heldKey) bool {
	return k.what == o.what && k.first <= o.last && o.first <= k.last
}

func (k heldKey) String() string {
	if k.last > k.first {
		return fmt.Sprintf("%s %d-%d", k.what, k.first, k.last)
	}
	if k.first > 0 {
		return fmt.Sprintf("%s %d", k.what, k.first)
	}
	return k.what
}

// heldKeys are the keys of an owner's map elements for host ports
// (single ports and ranges, which must not overlap) and masqueraded
// addresses.
func heldKeys(r Rules) []heldKey {
	var out []heldKey
	for _, m := range r.Masq {
		out = append(out, heldKey{what: "masqueraded address " + m.Addr.IP.String()})
	}
	if pm := r.PortMaps; pm != nil {
		for _, v4 := range []bool{true, false} {
			if v4 && pm.ContainerV4 == nil || !v4 && pm.ContainerV6 == nil {
				continue
			}
			for _, m := range fwapi.ForFamily(pm.Mappings, v4) {
				host := "*"
				if h := m.SpecificHost(); h != nil {
					host = h.String()
				}
				out = append(out, heldKey{fmt.Sprintf("host port %s/%s (IPv4 %v)", host, m.Protocol, v4), m.HostPort, m.HostLast()})
			}
		}
	}
	return out
}

// Remove forgets the owner.
func (f *Fake) Remove(_ context.Context, o Owner) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("remove %s", o); err != nil {
		return err
	}
	delete(f.state, o)
	return nil
}

// Check fails with ErrMissing unless the owner's recorded rules render to
// the same text as r.
func (f *Fake) Check(_ context.Context, o Owner, r Rules) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("check %s", o); err != nil {
		return err
	}
	have, ok := f.state[o]
	if !ok || render(f.Kind, o, have) != render(f.Kind, o, r) {
		return types.Errorf(ErrMissing, "%s: rules differ from the recorded ones", o)
	}
	return nil
}

// GC forgets the network's owners that are not kept.
func (f *Fake) GC(_ context.Context, plugin, network string, keep []Owner) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("gc %s/%s keep %d", plugin, network, len(keep)); err != nil {
		return err
	}
	kept := map[Owner]bool{}
	for _, o := range keep {
		o.Plugin, o.Network = plugin, network
		kept[o] = true
	}
	for o := range f.state {
		if o.Plugin == plugin && o.Network == network && !kept[o] {
			delete(f.state, o)
		}
	}
	return nil
}

// Mapped returns the mappings recorded for the owner.
func (f *Fake) Mapped(_ context.Context, o Owner) ([]PortMapping, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("mapped %s", o); err != nil {
		return nil, err
	}
	if pm := f.state[o].PortMaps; pm != nil {
		return append([]PortMapping{}, pm.Mappings...), nil
	}
	return nil, nil
}

// Usable returns Err.
func (f *Fake) Usable(context.Context) error { return f.Err }

// Owners returns the owners with rules, sorted.
func (f *Fake) Owners() []Owner {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Owner, 0, len(f.state))
	for o := range f.state {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Calls returns the calls made so far, one line each.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...)
}

// Dump returns, per owner in order, the text the backend would write.
func (f *Fake) Dump() string {
	var b strings.Builder
	for _, o := range f.Owners() {
		f.mu.Lock()
		fmt.Fprintf(&b, "# owner %s\n%s", o, render(f.Kind, o, f.state[o]))
		f.mu.Unlock()
	}
	return b.String()
}

// render returns the transaction text a backend of the given kind writes
// for an owner with no rules yet: the nft script, or the iptables-restore
// payloads (IPv4 then IPv6) followed by the nft script of the spoof check.
// Fake's Dump and Check compare it, and golden files hold it.
func render(kind string, o Owner, r Rules) string {
	var guard string
	if r.NeedsLocalnetGuard() {
		guard = "# localnet guard (nft)\n" + strings.Join(nftmodel.LocalnetGuard().Lines(), "\n") + "\n"
	}
	if kind != KindIPTables {
		return nftables.Script(o, r) + guard
	}
	out := natchain.Payloads(o, r) + guard
	if nft := nftables.BridgeScript(o, r); nft != "" {
		out += "# nft\n" + nft
	}
	return out
}
