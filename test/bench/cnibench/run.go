package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

var verbs = []string{"add", "check", "del"}

// scenario is one chain (floor, or ours on a backend) at one size.
type scenario struct {
	Chain   string             `json:"chain"`
	Client  string             `json:"client"`
	N       int                `json:"n"`
	Verbs   map[string]Stats   `json:"verbs"`
	ToFloor map[string]float64 `json:"ratio_to_floor,omitempty"`
}

type report struct {
	Scenarios      []*scenario                   `json:"scenarios"`
	ParallelErrors map[string]int                `json:"parallel_errors"`
	Parallel       int                           `json:"parallel"`
	HostLocal      map[string]Stats              `json:"host_local_add_del"`
	PeakKB         map[string]map[string]int64   `json:"peak_rss_kb"`
	PerPlugin      map[string]map[string]float64 `json:"per_plugin_median_ms"`
	Command        string                        `json:"command"`
}

func runAll(o *options) (*report, error) {
	rep := &report{ParallelErrors: map[string]int{}, HostLocal: map[string]Stats{}, Parallel: o.parallel,
		Command: "make bench BENCHFLAGS='" + flagLine() + "'"}
	maxN := o.parallel
	for _, n := range o.sizes {
		maxN = max(maxN, n)
	}
	netnses, err := makeNetns("b", maxN)
	if err != nil {
		return nil, err
	}
	floor := filepath.Join("/opt/cni", "floor")
	if err := floorDir(o.tools, floor); err != nil {
		return nil, err
	}
	for _, n := range o.sizes {
		if err := rep.sequential(o, floor, netnses[:n]); err != nil {
			return rep, err
		}
	}
	err = errors.Join(rep.inProcess(o, netnses[:o.sizes[0]]), rep.parallel(o, netnses[:o.parallel]),
		rep.hostLocal(o, netnses[0]))
	return rep, err
}

// sequential measures the floor and each backend at one size.
func (rep *report) sequential(o *options, floor string, netnses []string) error {
	n := len(netnses)
	chains := append([]string{"floor"}, o.backends...)
	var floorStats *scenario
	for _, chain := range chains {
		dir, confDir := o.bin, fmt.Sprintf("/etc/cni/bench-%s-%d", chain, n)
		if chain == "floor" {
			dir = floor
		}
		if err := writeConf(confDir, chainConf(chain, fmt.Sprintf("/var/lib/cni/bench-%s-%d", chain, n))); err != nil {
			return err
		}
		tool := &cnitool{tool: filepath.Join(o.tools, "cnitool"), pluginDir: dir, confDir: confDir, network: benchNet}
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, %d containers through cnitool...\n", chain, n)
		samples, err := tool.sequential(netnses)
		s := &scenario{Chain: chain, Client: "cnitool", N: n, Verbs: map[string]Stats{}}
		for _, v := range verbs {
			s.Verbs[v] = summarise(samples[v])
		}
		if chain == "floor" {
			floorStats = s
		} else {
			s.ToFloor = ratios(s, floorStats)
		}
		rep.Scenarios = append(rep.Scenarios, s)
		if err != nil {
			return fmt.Errorf("%s chain: %w", chain, err)
		}
	}
	return nil
}

func ratios(s, floor *scenario) map[string]float64 {
	out := map[string]float64{}
	for _, v := range verbs {
		if f := floor.Verbs[v].Median; f > 0 {
			out[v] = s.Verbs[v].Median / f
		}
	}
	return out
}

// inProcess measures each backend through libcni in this process, and
// the plugins' peak memory.
func (rep *report) inProcess(o *options, netnses []string) error {
	m := &meteredExec{peakKB: map[string]map[string]int64{}, times: map[string]map[string][]time.Duration{}}
	var errs []error
	for _, backend := range o.backends {
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, %d containers through libcni in-process...\n", backend, len(netnses))
		conf := chainConf(backend, "/var/lib/cni/bench-inproc-"+backend)
		m.label = backend
		samples, err := inProcess(o.bin, conf, netnses, m)
		s := &scenario{Chain: backend, Client: "libcni", N: len(netnses), Verbs: map[string]Stats{}}
		for _, v := range verbs {
			s.Verbs[v] = summarise(samples[v])
		}
		rep.Scenarios = append(rep.Scenarios, s)
		errs = append(errs, err)
	}
	rep.PeakKB = m.peakKB
	rep.PerPlugin = map[string]map[string]float64{}
	for key, byVerb := range m.times {
		rep.PerPlugin[key] = map[string]float64{}
		for verb, ds := range byVerb {
			rep.PerPlugin[key][verb] = summarise(ds).Median
		}
	}
	return errors.Join(errs...)
}

func (rep *report) parallel(o *options, netnses []string) error {
	for _, backend := range o.backends {
		confDir := "/etc/cni/bench-parallel-" + backend
		if err := writeConf(confDir, chainConf(backend, "/var/lib/cni/bench-parallel-"+backend)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, %d parallel ADDs then DELs...\n", backend, len(netnses))
		tool := &cnitool{tool: filepath.Join(o.tools, "cnitool"), pluginDir: o.bin, confDir: confDir, network: benchNet}
		errs := tool.parallel(netnses)
		rep.ParallelErrors[backend] = len(errs)
		for i, err := range errs {
			if i < 3 {
				fmt.Fprintln(os.Stderr, "cnibench: parallel:", err)
			}
		}
	}
	return nil
}

func (rep *report) hostLocal(o *options, netns string) error {
	for _, existing := range []int{0, o.leases} {
		fmt.Fprintf(os.Stderr, "cnibench: host-local ADD+DEL with %d existing leases...\n", existing)
		s, err := hostLocal(o.bin, netns, existing, 200)
		if err != nil {
			return err
		}
		rep.HostLocal[fmt.Sprint(existing)] = s
	}
	return nil
}
