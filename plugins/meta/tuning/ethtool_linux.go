package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/types"
)

// featureWant is one kernel feature that is to be on or off, with the
// configuration's name (a kernel name or a group) it comes from.
type featureWant struct {
	entry string
	name  string
	on    bool
}

func onOff(on bool) string {
	return map[bool]string{true: "on", false: "off"}[on]
}

// expandFeatures resolves the configured names against the kernel's: a
// kernel name must exist, and a group stands for the members the kernel
// has. A group asked on leaves out members the driver has fixed off, as
// `ethtool -K $dev tx-checksumming on` does.
func expandFeatures(cfg Features, have *ethtool.Features, ifName string) ([]featureWant, error) {
	var wants []featureWant
	var errs []error
	for _, e := range cfg {
		if _, group := featureGroups[e.Name]; !group {
			if _, ok := have.Index(e.Name); !ok {
				errs = append(errs, types.Errorf(types.ErrInvalidConfig,
					"features %q: the kernel has no such feature; `ethtool -k %s` lists the names", e.Name, ifName))
			}
			wants = append(wants, featureWant{e.Name, e.Name, e.On})
			continue
		}
		members := 0
		var in []featureWant
		for _, n := range have.Names {
			if !inGroup(e.Name, n) {
				continue
			}
			members++
			if st, _ := have.Lookup(n); e.On && !st.Changeable && !st.Active {
				continue
			}
			in = append(in, featureWant{e.Name, n, e.On})
		}
		if len(in) == 0 {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig,
				"features %q: %t: the driver of %q has all %d of its features (%s) fixed off",
				e.Name, e.On, ifName, members, featureGroups[e.Name]))
		}
		wants = append(wants, in...)
	}
	return wants, errors.Join(errs...)
}

// refuseFixed returns an error naming every feature that is to change but
// that the driver does not let change.
func refuseFixed(wants []featureWant, have *ethtool.Features, ifName string) error {
	var errs []error
	for _, w := range wants {
		if st, _ := have.Lookup(w.name); !st.Changeable && st.Active != w.on {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig,
				"features %q: %t: the driver of %q has %s fixed %s", w.entry, w.on, ifName, w.name, onOff(st.Active)))
		}
	}
	return errors.Join(errs...)
}

// refuseUnmet returns an error naming every feature that is not as
// wanted: one the kernel keeps on or off because of others (TCP
// segmentation needs checksumming, for example).
func refuseUnmet(wants []featureWant, have *ethtool.Features, ifName string) error {
	var errs []error
	for _, w := range wants {
		if st, _ := have.Lookup(w.name); st.Active != w.on {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig,
				"features %q: %t: the kernel keeps %s of %q %s, as other features require; `ethtool -k %s` shows them",
				w.entry, w.on, w.name, ifName, onOff(st.Active), ifName))
		}
	}
	return errors.Join(errs...)
}

// readFeatures returns the interface's features; a driver without any is
// an invalid configuration for a user who asks for some.
func readFeatures(c *ethtool.Client, ifName string) (*ethtool.Features, error) {
	have, err := c.Features(ifName)
	if errors.Is(err, ethtool.ErrNotSupported) {
		return nil, types.Errorf(types.ErrInvalidConfig, "features: the driver of %q has none: %w", ifName, err)
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	return have, nil
}

// featurePlan is what ADD does to the features: the wanted values to set,
// the original wanted values, and what must be active after.
type featurePlan struct {
	wants []featureWant
	set   []ethtool.Feature
	orig  map[string]bool
}

// planFeatures refuses, before anything changes, a name the kernel does
// not have, a fixed feature, and a feature already wanted that the kernel
// keeps the other way.
func planFeatures(c *ethtool.Client, cfg Features, ifName string) (*featurePlan, error) {
	have, err := readFeatures(c, ifName)
	if err != nil {
		return nil, err
	}
	wants, err := expandFeatures(cfg, have, ifName)
	if err != nil {
		return nil, err
	}
	if err := refuseFixed(wants, have, ifName); err != nil {
		return nil, err
	}
	p := &featurePlan{wants: wants, orig: map[string]bool{}}
	for _, w := range wants {
		st, _ := have.Lookup(w.name)
		if _, seen := p.orig[w.name]; seen || !st.Changeable || st.Wanted == w.on {
			continue
		}
		p.set = append(p.set, ethtool.Feature{Name: w.name, Wanted: w.on})
		p.orig[w.name] = st.Wanted
	}
	if len(p.set) == 0 {
		return p, refuseUnmet(wants, have, ifName)
	}
	return p, nil
}

// channelCount is one of the four counts, side by side: configured,
// current, maximum, and where the plan keeps the new and old value.
type channelCount struct {
	name     string
	want     *int64
	cur, max uint32
	set      **uint32
	orig     **uint32
}

// channelPlan is what ADD does to the channel counts.
type channelPlan struct {
	set  ethtool.ChannelCounts
	orig ChannelState
}

// planChannels refuses, before anything changes, a driver without
// channels, a kind of channel the driver lacks and a count above its
// maximum.
func planChannels(c *ethtool.Client, cfg *Channels, ifName string) (*channelPlan, error) {
	have, err := c.Channels(ifName)
	if errors.Is(err, ethtool.ErrNotSupported) {
		return nil, types.Errorf(types.ErrInvalidConfig, "channels: the driver of %q has no channel counts to set: %w", ifName, err)
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	p := &channelPlan{}
	var errs []error
	for _, k := range []channelCount{
		{"rx", cfg.RX, have.RX, have.MaxRX, &p.set.RX, &p.orig.RX},
		{"tx", cfg.TX, have.TX, have.MaxTX, &p.set.TX, &p.orig.TX},
		{"other", cfg.Other, have.Other, have.MaxOther, &p.set.Other, &p.orig.Other},
		{"combined", cfg.Combined, have.Combined, have.MaxCombined, &p.set.Combined, &p.orig.Combined},
	} {
		if k.want == nil || uint32(*k.want) == k.cur {
			continue
		}
		n, cur := uint32(*k.want), k.cur
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

// ethtoolPlan is what ADD changes over the ethtool family, with the client
// (in the container namespace) that changes it.
type ethtoolPlan struct {
	client   *ethtool.Client
	ifName   string
	features *featurePlan
	channels *channelPlan
}

// planEthtool reads the features and channels c names, refuses what the
// driver cannot do, and plans the rest. It is nil when c names none.
func planEthtool(c *Config, ifName string) (*ethtoolPlan, error) {
	if len(c.Features) == 0 && c.Channels.Empty() {
		return nil, nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	p := &ethtoolPlan{client: client, ifName: ifName}
	var ferr, cerr error
	if len(c.Features) > 0 {
		p.features, ferr = planFeatures(client, c.Features, ifName)
	}
	if !c.Channels.Empty() {
		p.channels, cerr = planChannels(client, c.Channels, ifName)
	}
	if err := errors.Join(ferr, cerr); err != nil {
		client.Close()
		return nil, err
	}
	return p, nil
}

// close closes the plan's client; a nil plan has none.
func (p *ethtoolPlan) close() {
	if p != nil {
		p.client.Close()
	}
}

// snapshot records in st the original values of what the plan changes.
func (p *ethtoolPlan) snapshot(st *State) {
	if p == nil {
		return
	}
	if p.features != nil && len(p.features.orig) > 0 {
		st.Features = p.features.orig
	}
	if p.channels != nil && p.channels.set != (ethtool.ChannelCounts{}) {
		orig := p.channels.orig
		st.Channels = &orig
	}
}

// changes returns the plan as link attribute changes, features first.
// Setting the features checks that the kernel made every one of them
// active as asked, and puts them back if not.
func (p *ethtoolPlan) changes() []attrChange {
	if p == nil {
		return nil
	}
	var out []attrChange
	if f := p.features; f != nil && len(f.set) > 0 {
		out = append(out, attrChange{
			func(netlink.Link) error { return p.setFeatures(f) },
			func(netlink.Link) error { return setFeatures(p.client, p.ifName, f.orig) }})
	}
	if ch := p.channels; ch != nil && ch.set != (ethtool.ChannelCounts{}) {
		out = append(out, attrChange{
			func(netlink.Link) error { return setChannels(p.client, p.ifName, ch.set) },
			func(netlink.Link) error { return setChannels(p.client, p.ifName, counts(&ch.orig)) }})
	}
	return out
}

// setFeatures sets f's wanted values, then refuses, and undoes, a feature
// the kernel did not make active as asked.
func (p *ethtoolPlan) setFeatures(f *featurePlan) error {
	if err := p.client.SetFeatures(p.ifName, f.set); err != nil {
		return ethtoolRefusal("features", p.ifName, err)
	}
	have, err := readFeatures(p.client, p.ifName)
	if err == nil {
		err = refuseUnmet(f.wants, have, p.ifName)
	}
	if err != nil {
		return errors.Join(err, undoErr(setFeatures(p.client, p.ifName, f.orig)))
	}
	return nil
}

// setFeatures asks for each feature of wanted, by kernel name, to be on or
// off. Equivalent to: ethtool -K $ifName name on|off ...
func setFeatures(c *ethtool.Client, ifName string, wanted map[string]bool) error {
	var set []ethtool.Feature
	for _, name := range slices.Sorted(maps.Keys(wanted)) {
		set = append(set, ethtool.Feature{Name: name, Wanted: wanted[name]})
	}
	if err := c.SetFeatures(ifName, set); err != nil {
		return ethtoolRefusal("features", ifName, err)
	}
	return nil
}

// setChannels equivalent to: ethtool -L $ifName rx N tx N other N combined N
func setChannels(c *ethtool.Client, ifName string, set ethtool.ChannelCounts) error {
	if err := c.SetChannels(ifName, set); err != nil {
		return ethtoolRefusal("channels "+describeCounts(set), ifName, err)
	}
	return nil
}

// ethtoolRefusal gives a kernel refusal its CNI kind: a value the driver
// refuses is an invalid configuration, anything else an I/O failure.
func ethtoolRefusal(what, ifName string, err error) error {
	if errors.Is(err, ethtool.ErrRefused) || errors.Is(err, ethtool.ErrNotSupported) {
		return types.Errorf(types.ErrInvalidConfig, "%s: the driver of %q refused: %w", what, ifName, err)
	}
	return types.Errorf(types.ErrIO, "%s: %w", what, err)
}

// counts turns saved counts into a request.
func counts(s *ChannelState) ethtool.ChannelCounts {
	return ethtool.ChannelCounts{RX: s.RX, TX: s.TX, Other: s.Other, Combined: s.Combined}
}

// describeCounts spells counts as `ethtool -L` takes them: "rx 2 tx 2".
func describeCounts(set ethtool.ChannelCounts) string {
	s := ""
	for _, c := range []struct {
		name string
		n    *uint32
	}{{"rx", set.RX}, {"tx", set.TX}, {"other", set.Other}, {"combined", set.Combined}} {
		if c.n != nil {
			s += fmt.Sprintf(" %s %d", c.name, *c.n)
		}
	}
	if s == "" {
		return "none"
	}
	return s[1:]
}

// checkEthtool reads the features and channel counts c names and fails,
// naming each, when one differs. Runs inside the container namespace.
func checkEthtool(c *Config, ifName string) error {
	if len(c.Features) == 0 && c.Channels.Empty() {
		return nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	defer client.Close()
	var errs []error
	if len(c.Features) > 0 {
		errs = append(errs, checkFeatures(client, c.Features, ifName))
	}
	if !c.Channels.Empty() {
		errs = append(errs, checkChannels(client, c.Channels, ifName))
	}
	return errors.Join(errs...)
}

func checkFeatures(client *ethtool.Client, cfg Features, ifName string) error {
	have, err := readFeatures(client, ifName)
	if err != nil {
		return err
	}
	wants, err := expandFeatures(cfg, have, ifName)
	if err != nil {
		return err
	}
	var errs []error
	for _, w := range wants {
		if st, _ := have.Lookup(w.name); st.Active != w.on {
			errs = append(errs, fmt.Errorf("%w: features %q: %s of %q is %s, want %s",
				errDrift, w.entry, w.name, ifName, onOff(st.Active), onOff(w.on)))
		}
	}
	return errors.Join(errs...)
}

func checkChannels(client *ethtool.Client, cfg *Channels, ifName string) error {
	have, err := client.Channels(ifName)
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	var errs []error
	for _, k := range []channelCount{
		{name: "rx", want: cfg.RX, cur: have.RX}, {name: "tx", want: cfg.TX, cur: have.TX},
		{name: "other", want: cfg.Other, cur: have.Other}, {name: "combined", want: cfg.Combined, cur: have.Combined},
	} {
		if k.want != nil && int64(k.cur) != *k.want {
			errs = append(errs, fmt.Errorf("%w: channels.%s of %q is %d, want %d", errDrift, k.name, ifName, k.cur, *k.want))
		}
	}
	return errors.Join(errs...)
}

// restoreEthtool puts back the features and channel counts recorded in
// st. Runs inside the container namespace.
func restoreEthtool(st *State, ifName string) error {
	if len(st.Features) == 0 && st.Channels == nil {
		return nil
	}
	client, err := ethtool.Dial()
	if err != nil {
		return err
	}
	defer client.Close()
	var errs []error
	if len(st.Features) > 0 {
		errs = append(errs, setFeatures(client, ifName, st.Features))
	}
	if st.Channels != nil {
		errs = append(errs, setChannels(client, ifName, counts(st.Channels)))
	}
	return errors.Join(errs...)
}
