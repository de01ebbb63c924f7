package main

import (
	"errors"
	"fmt"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/linkops"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/plugins/meta/tuning/ethconf"
)

// ethSettings returns the features and channel counts c asks for, in
// ethconf's terms. Validate has kept the counts within 32 bits.
func ethSettings(c *Config) ethconf.Settings {
	s := ethconf.Settings{Features: c.Features}
	if c.Channels != nil {
		s.Channels = ethtool.ChannelCounts{RX: toU32(c.Channels.RX), TX: toU32(c.Channels.TX),
			Other: toU32(c.Channels.Other), Combined: toU32(c.Channels.Combined)}
	}
	return s
}

func toU32(n *int64) *uint32 {
	if n == nil {
		return nil
	}
	v := uint32(*n)
	return &v
}

// ethChanges returns the plan's changes as attribute changes.
func ethChanges(p *ethconf.Plan) []attrChange {
	var out []attrChange
	for _, ch := range p.Changes() {
		out = append(out, attrChange{
			func(linkops.Links, linkops.Attrs) error { return ch.Apply() },
			func(linkops.Links, linkops.Attrs) error { return ch.Undo() }})
	}
	return out
}

// snapshotEthtool records in st the original values of what p changes.
func snapshotEthtool(st *backup.State, p *ethconf.Plan) {
	features, channels := p.Originals()
	st.Features = features
	if channels != (ethtool.ChannelCounts{}) {
		st.Channels = &ethconf.ChannelState{RX: channels.RX, TX: channels.TX, Other: channels.Other, Combined: channels.Combined}
	}
}

// checkEthtool fails, naming each, when a feature or channel count c asks
// for differs on the interface. Runs inside the container namespace.
func checkEthtool(c *Config, ifName string) error {
	drifts, err := ethconf.Check(ethSettings(c), ifName)
	errs := []error{err}
	for _, d := range drifts {
		errs = append(errs, fmt.Errorf("%w: %s", errDrift, d))
	}
	return errors.Join(errs...)
}

// restoreEthtool puts back the features and channel counts recorded in
// st. Runs inside the container namespace.
func restoreEthtool(st *backup.State, ifName string) error {
	var channels ethtool.ChannelCounts
	if ch := st.Channels; ch != nil {
		channels = ethtool.ChannelCounts{RX: ch.RX, TX: ch.TX, Other: ch.Other, Combined: ch.Combined}
	}
	return ethconf.Restore(st.Features, channels, ifName)
}
