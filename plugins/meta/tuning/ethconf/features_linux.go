package ethconf

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/types"
)

// want is one kernel feature that is to be on or off, with the configured
// name (a kernel name or a group) it comes from.
type want struct {
	entry string
	name  string
	on    bool
}

func onOff(on bool) string {
	return map[bool]string{true: "on", false: "off"}[on]
}

// expand resolves the configured names against the kernel's: a kernel name
// must exist, and a group stands for the members the kernel has. A group
// asked on leaves out members the driver has fixed off, as `ethtool -K
// $dev tx-checksumming on` does.
func expand(reqs []Request, have *ethtool.Features, ifName string) ([]want, error) {
	var wants []want
	var errs []error
	for _, r := range reqs {
		if _, group := Groups[r.Name]; !group {
			if _, ok := have.Index(r.Name); !ok {
				errs = append(errs, types.Errorf(types.ErrInvalidConfig,
					"features %q: the kernel has no such feature; `ethtool -k %s` lists the names", r.Name, ifName))
			}
			wants = append(wants, want{r.Name, r.Name, r.On})
			continue
		}
		members := 0
		var in []want
		for _, n := range have.Names {
			if !InGroup(r.Name, n) {
				continue
			}
			members++
			if st, _ := have.Lookup(n); r.On && !st.Changeable && !st.Active {
				continue
			}
			in = append(in, want{r.Name, n, r.On})
		}
		if len(in) == 0 {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig,
				"features %q: %t: the driver of %q has all %d of its features (%s) fixed off",
				r.Name, r.On, ifName, members, Groups[r.Name]))
		}
		wants = append(wants, in...)
	}
	return wants, errors.Join(errs...)
}

// refuseFixed returns an error naming every feature that is to change but
// that the driver does not let change.
func refuseFixed(wants []want, have *ethtool.Features, ifName string) error {
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
func refuseUnmet(wants []want, have *ethtool.Features, ifName string) error {
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

// resolve reads the interface's features and expands reqs against them.
func resolve(c *ethtool.Client, reqs []Request, ifName string) (*ethtool.Features, []want, error) {
	have, err := readFeatures(c, ifName)
	if err != nil {
		return nil, nil, err
	}
	wants, err := expand(reqs, have, ifName)
	if err != nil {
		return nil, nil, err
	}
	return have, wants, nil
}

// featurePlan is what ADD does to the features: the wanted values to set,
// the original wanted values, and what must be active after.
type featurePlan struct {
	wants []want
	set   []ethtool.Feature
	orig  map[string]bool
}

// planFeatures refuses, before anything changes, a name the kernel does
// not have, a fixed feature, and a feature already wanted that the kernel
// keeps the other way.
func planFeatures(c *ethtool.Client, reqs []Request, ifName string) (*featurePlan, error) {
	have, wants, err := resolve(c, reqs, ifName)
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

// apply sets the planned wanted values, then refuses, and undoes, a
// feature the kernel did not make active as asked.
func (f *featurePlan) apply(c *ethtool.Client, ifName string) error {
	if err := c.SetFeatures(ifName, f.set); err != nil {
		return refusal("features", ifName, err)
	}
	have, err := readFeatures(c, ifName)
	if err == nil {
		err = refuseUnmet(f.wants, have, ifName)
	}
	if err != nil {
		if uerr := setFeatures(c, ifName, f.orig); uerr != nil {
			err = errors.Join(err, fmt.Errorf("undoing the features: %w", uerr))
		}
		return err
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
		return refusal("features", ifName, err)
	}
	return nil
}

// checkFeatures returns a drift for every configured feature that is not
// active as asked.
func checkFeatures(c *ethtool.Client, reqs []Request, ifName string) ([]string, error) {
	have, wants, err := resolve(c, reqs, ifName)
	if err != nil {
		return nil, err
	}
	var drifts []string
	for _, w := range wants {
		if st, _ := have.Lookup(w.name); st.Active != w.on {
			drifts = append(drifts, fmt.Sprintf("features %q: %s of %q is %s, want %s",
				w.entry, w.name, ifName, onOff(st.Active), onOff(w.on)))
		}
	}
	return drifts, nil
}

// refusal gives a kernel refusal its CNI kind: a value the driver refuses
// is an invalid configuration, anything else an I/O failure.
func refusal(what, ifName string, err error) error {
	if errors.Is(err, ethtool.ErrRefused) || errors.Is(err, ethtool.ErrNotSupported) {
		return types.Errorf(types.ErrInvalidConfig, "%s: the driver of %q refused: %w", what, ifName, err)
	}
	return types.Errorf(types.ErrIO, "%s: %w", what, err)
}
