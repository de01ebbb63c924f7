package ethconf

import (
	"errors"
	"fmt"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/types"
)

// count is one of the four channel counts, side by side: asked for,
// current, maximum, and where the plan keeps the new and old value.
type count struct {
	name     string
	want     *uint32
	cur, max uint32
	set      **uint32
	orig     **uint32
}

// counts lists the four counts of want against have, pointing into set
// and orig.
func counts(want ethtool.ChannelCounts, have ethtool.Channels, set, orig *ethtool.ChannelCounts) []count {
	return []count{
		{"rx", want.RX, have.RX, have.MaxRX, &set.RX, &orig.RX},
		{"tx", want.TX, have.TX, have.MaxTX, &set.TX, &orig.TX},
		{"other", want.Other, have.Other, have.MaxOther, &set.Other, &orig.Other},
		{"combined", want.Combined, have.Combined, have.MaxCombined, &set.Combined, &orig.Combined},
	}
}

// readChannels returns the interface's channels; a driver without any is
// an invalid configuration for a user who asks for some.
func readChannels(c *ethtool.Client, ifName string) (ethtool.Channels, error) {
	have, err := c.Channels(ifName)
	if errors.Is(err, ethtool.ErrNotSupported) {
		return have, types.Errorf(types.ErrInvalidConfig, "channels: the driver of %q has no channel counts to set: %w", ifName, err)
	}
	if err != nil {
		return have, types.Errorf(types.ErrIO, "%w", err)
	}
	return have, nil
}

// channelPlan is what ADD does to the channel counts.
type channelPlan struct {
	set, orig ethtool.ChannelCounts
}

// planChannels refuses, before anything changes, a driver without
// channels, a kind of channel the driver lacks and a count above its
// maximum.
func planChannels(c *ethtool.Client, want ethtool.ChannelCounts, ifName string) (*channelPlan, error) {
	have, err := readChannels(c, ifName)
	if err != nil {
		return nil, err
	}
	p := &channelPlan{}
	var errs []error
	for _, k := range counts(want, have, &p.set, &p.orig) {
		if k.want == nil || *k.want == k.cur {
			continue
		}
		n, cur := *k.want, k.cur
		switch {
		case k.max == 0:
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "channels.%s %d: the driver of %q has no %s channels", k.name, n, ifName, k.name))
		case n > k.max:
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "channels.%s %d: above the maximum of %q, %d", k.name, n, ifName, k.max))
		default:
			*k.set, *k.orig = &n, &cur
		}
	}
	return p, errors.Join(errs...)
}

// setChannels equivalent to: ethtool -L $ifName rx N tx N other N combined N
func setChannels(c *ethtool.Client, ifName string, set ethtool.ChannelCounts) error {
	if err := c.SetChannels(ifName, set); err != nil {
		return refusal("channels "+describe(set), ifName, err)
	}
	return nil
}

// checkChannels returns a drift for every count that differs from want.
func checkChannels(c *ethtool.Client, want ethtool.ChannelCounts, ifName string) ([]string, error) {
	have, err := readChannels(c, ifName)
	if err != nil {
		return nil, err
	}
	var drifts []string
	var unused ethtool.ChannelCounts
	for _, k := range counts(want, have, &unused, &unused) {
		if k.want != nil && k.cur != *k.want {
			drifts = append(drifts, fmt.Sprintf("channels.%s of %q is %d, want %d", k.name, ifName, k.cur, *k.want))
		}
	}
	return drifts, nil
}

// describe spells counts as `ethtool -L` takes them: "rx 2 tx 2".
func describe(set ethtool.ChannelCounts) string {
	s := ""
	var unused ethtool.ChannelCounts
	for _, k := range counts(set, ethtool.Channels{}, &unused, &unused) {
		if k.want != nil {
			s += fmt.Sprintf(" %s %d", k.name, *k.want)
		}
	}
	if s == "" {
		return "none"
	}
	return s[1:]
}
