package firewall

import (
	"context"
	"errors"

	"cnisuite/pkg/rootless"
	"cnisuite/pkg/types"
)

// auto is the backend of a configuration that names none. Each network
// gets one backend, chosen when it first gets rules and recorded (records)
// until its last attachment with rules goes, so that a network never mixes
// backends; the choice follows the node (readNode, nodeSignals.prefer).
// Remove and GC without a record look at both backends, so rules written
// before the record existed (by an earlier version, or by the reference
// plugins, which both backends remove) are found whichever wrote them.
type auto struct {
	ipt, nft Backend
	rec      records
	// signals reads the node; tests play kinds of node with it.
	signals func() (nodeSignals, error)
}

// newAuto returns the automatic choice; it records nothing in a rootless
// runtime's user namespace, where /run/cnisuite is not ours to write.
func newAuto(ipt, nft Backend) *auto {
	rec := records{root: RecordRoot}
	if !rootless.NodeRoot() {
		rec.root = ""
	}
	return &auto{ipt: ipt, nft: nft, rec: rec, signals: readNode}
}

func (a *auto) of(kind string) Backend {
	if kind == KindIPTables {
		return a.ipt
	}
	return a.nft
}

// decide chooses for a network without a record: the backend the node
// gives reason for when it is usable, else the other.
func (a *auto) decide(ctx context.Context) (string, error) {
	s, err := a.signals()
	if err != nil {
		return "", types.Errorf(types.ErrIO, "reading the node's firewall: %w", err)
	}
	prefer, _ := s.prefer()
	b, err := choose(ctx, a.of(prefer), a.of(otherKind(prefer)))
	if err != nil {
		return "", err
	}
	if b == a.ipt {
		return KindIPTables, nil
	}
	return KindNFTables, nil
}

func otherKind(kind string) string {
	if kind == KindIPTables {
		return KindNFTables
	}
	return KindIPTables
}

// current returns the backend recorded for the network, or nil.
func (a *auto) current(network string) (Backend, error) {
	kind, ok, err := a.rec.read(network)
	if err != nil || !ok {
		return nil, err
	}
	return a.of(kind), nil
}

// Ensure writes o's rules with its network's backend, choosing and
// recording it when the network has none yet. (Host ports stay
// single-owner across the backends through the claims New puts in front,
// claims_linux.go.)
func (a *auto) Ensure(ctx context.Context, o Owner, r Rules) error {
	kind, err := a.rec.hold(ctx, o, func() (string, error) { return a.decide(ctx) })
	if err != nil {
		return err
	}
	return a.of(kind).Ensure(ctx, o, r)
}

// Remove removes o's rules with its network's backend, or with both when
// the network has no record; o's hold goes once its rules are gone.
func (a *auto) Remove(ctx context.Context, o Owner) error {
	b, err := a.current(o.Network)
	if err != nil {
		return err
	}
	if b != nil {
		err = b.Remove(ctx, o)
	} else {
		err = a.both(ctx, func(b Backend) error { return b.Remove(ctx, o) })
	}
	if err != nil {
		return err
	}
	return a.rec.release(ctx, o)
}

// both runs fn on each backend that is usable here, iptables first.
func (a *auto) both(ctx context.Context, fn func(Backend) error) error {
	var errs []error
	ran := false
	for _, b := range []Backend{a.ipt, a.nft} {
		if b.Usable(ctx) != nil {
			continue
		}
		ran = true
		errs = append(errs, fn(b))
	}
	if !ran {
		return a.Usable(ctx)
	}
	return errors.Join(errs...)
}

// Check checks o's rules with its network's backend; without a record, with
// the one an ADD would choose now.
func (a *auto) Check(ctx context.Context, o Owner, r Rules) error {
	b, err := a.current(o.Network)
	if err != nil {
		return err
	}
	if b == nil {
		kind, err := a.decide(ctx)
		if err != nil {
			return err
		}
		b = a.of(kind)
	}
	return b.Check(ctx, o, r)
}

// GC collects with both backends (a stale attachment may predate the
// record), then lets go of the holds of the attachments gone.
func (a *auto) GC(ctx context.Context, plugin, network string, keep []Owner) error {
	if err := a.both(ctx, func(b Backend) error { return b.GC(ctx, plugin, network, keep) }); err != nil {
		return err
	}
	return a.rec.prune(ctx, plugin, network, keep)
}

// Usable fails only when neither backend is usable.
func (a *auto) Usable(ctx context.Context) error {
	_, err := choose(ctx, a.ipt, a.nft)
	return err
}

// Mapped reads o's host ports from its network's backend, or from both.
func (a *auto) Mapped(ctx context.Context, o Owner) ([]PortMapping, error) {
	b, err := a.current(o.Network)
	if err != nil {
		return nil, err
	}
	bs := []Backend{b}
	if b == nil {
		bs = []Backend{a.ipt, a.nft}
	}
	var out []PortMapping
	var errs []error
	for _, b := range bs {
		if mr, ok := b.(MappingReader); ok {
			ms, err := mr.Mapped(ctx, o)
			out = append(out, ms...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}
