package ethconf

import (
	"errors"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/types"
)

// Settings are the features and channel counts a configuration asks for.
type Settings struct {
	Features []Request
	Channels ethtool.ChannelCounts
}

// Empty reports whether s asks for nothing.
func (s Settings) Empty() bool {
	return len(s.Features) == 0 && s.Channels == ethtool.ChannelCounts{}
}

// Change is one planned change and its inverse.
type Change struct {
	Apply, Undo func() error
}

// Plan is what ADD changes over the ethtool family, with the client, in
// the container namespace, that changes it.
type Plan struct {
	client   *ethtool.Client
	ifName   string
	features *featurePlan
	channels *channelPlan
}

// NewPlan reads the features and channels s names on the interface
// ifName of the calling thread's namespace, refuses (as an invalid
// configuration naming the key and value) what the driver cannot do, and
// plans the rest. It returns nil when s asks for nothing. Close the plan.
func NewPlan(s Settings, ifName string) (*Plan, error) {
	if s.Empty() {
		return nil, nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	p := &Plan{client: client, ifName: ifName}
	var ferr, cerr error
	if len(s.Features) > 0 {
		p.features, ferr = planFeatures(client, s.Features, ifName)
	}
	if s.Channels != (ethtool.ChannelCounts{}) {
		p.channels, cerr = planChannels(client, s.Channels, ifName)
	}
	if err := errors.Join(ferr, cerr); err != nil {
		client.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the plan's client; a nil plan has none.
func (p *Plan) Close() {
	if p != nil {
		p.client.Close()
	}
}

// Originals returns, for what the plan changes, the values DEL is to put
// back: the wanted value of each feature, by kernel name, and the counts.
func (p *Plan) Originals() (map[string]bool, ethtool.ChannelCounts) {
	var features map[string]bool
	var channels ethtool.ChannelCounts
	if p != nil && p.features != nil && len(p.features.orig) > 0 {
		features = p.features.orig
	}
	if p != nil && p.channels != nil {
		channels = p.channels.orig
	}
	return features, channels
}

// Changes returns the planned changes, features first, in one request
// each. Applying the features fails, after undoing them, when the kernel
// did not make each one active as asked.
func (p *Plan) Changes() []Change {
	if p == nil {
		return nil
	}
	var out []Change
	if f := p.features; f != nil && len(f.set) > 0 {
		out = append(out, Change{
			func() error { return f.apply(p.client, p.ifName) },
			func() error { return setFeatures(p.client, p.ifName, f.orig) }})
	}
	if ch := p.channels; ch != nil && ch.set != (ethtool.ChannelCounts{}) {
		out = append(out, Change{
			func() error { return setChannels(p.client, p.ifName, ch.set) },
			func() error { return setChannels(p.client, p.ifName, ch.orig) }})
	}
	return out
}

// Check reads the features and channel counts s names on ifName and
// returns one line for each that differs, such as `channels.rx of "eth0"
// is 1, want 2`.
func Check(s Settings, ifName string) ([]string, error) {
	if s.Empty() {
		return nil, nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	defer client.Close()
	var drifts []string
	if len(s.Features) > 0 {
		d, err := checkFeatures(client, s.Features, ifName)
		if err != nil {
			return nil, err
		}
		drifts = append(drifts, d...)
	}
	if s.Channels != (ethtool.ChannelCounts{}) {
		d, err := checkChannels(client, s.Channels, ifName)
		if err != nil {
			return nil, err
		}
		drifts = append(drifts, d...)
	}
	return drifts, nil
}

// Restore asks for each feature of features, by kernel name, to be wanted
// as recorded, and sets the channel counts recorded.
func Restore(features map[string]bool, channels ethtool.ChannelCounts, ifName string) error {
	if len(features) == 0 && channels == (ethtool.ChannelCounts{}) {
		return nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return err
	}
	defer client.Close()
	var errs []error
	if len(features) > 0 {
		errs = append(errs, setFeatures(client, ifName, features))
	}
	if channels != (ethtool.ChannelCounts{}) {
		errs = append(errs, setChannels(client, ifName, channels))
	}
	return errors.Join(errs...)
}
