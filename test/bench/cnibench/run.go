package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cnisuite/test/bench/crirow"
)

var verbs = []string{"add", "check", "del"}

// scenario is one chain (floor, or ours on a backend) at one size.
type scenario struct {
	Chain   string             `json:"chain"`
	Client  string             `json:"client"`
	N       int                `json:"n"`
	Verbs   map[string]Stats   `json:"verbs"`
	ToFloor map[string]float64 `json:"ratio_to_floor,omitempty"`
	// GrowthOverFloor divides the growth by the floor's growth in the same
	// interleaved run: what is left once the machine's own drift is taken out.
	GrowthOverFloor map[string]float64 `json:"growth_over_floor_growth,omitempty"`
	// CPU summarises the CPU time per call (cnitool and the processes it
	// waited for) of the sequential pairs, by verb.
	CPU map[string]Stats `json:"cpu_ms,omitempty"`
}

type report struct {
	Scenarios      []*scenario                   `json:"scenarios"`
	ParallelErrors map[string]int                `json:"parallel_errors"`
	Parallel       int                           `json:"parallel"`
	HostLocal      map[string]Stats              `json:"host_local_add_del"`
	Upgrade        *Upgrade                      `json:"host_local_upgrade_on_disk"`
	Bursts         []*Burst                      `json:"bursts"`
	Busy           []*BusyNode                   `json:"busy_node"`
	Status         []*StatusRow                  `json:"status"`
	PeakKB         map[string]map[string]int64   `json:"peak_rss_kb"`
	PerPlugin      map[string]map[string]float64 `json:"per_plugin_median_ms"`
	CRI            []*crirow.Row                 `json:"cri,omitempty"`
	Command        string                        `json:"command"`
}

func runAll(o *options) (*report, error) {
	defer removeLogs()
	unmount, err := stateOnDisk()
	if err != nil {
		return nil, err
	}
	defer unmount()
	rep := &report{ParallelErrors: map[string]int{}, HostLocal: map[string]Stats{}, Parallel: o.parallel,
		Command: "make bench BENCHFLAGS='" + flagLine() + "'"}
	if o.hostLocalOnly {
		netnses, err := makeNetns("hl", 1)
		defer removeNetns(netnses)
		if err != nil {
			return nil, err
		}
		return rep, rep.hostLocal(o, netnses[0])
	}
	// One set of container namespaces: the floor configures nothing in
	// them, so it shares them with the chain it is paired with, and the
	// node holds exactly N containers of ours, as a node with N pods does.
	netnses, err := makeNetns("c", namespacesNeeded(o))
	defer func() { removeNetns(netnses) }() // what trimNetns left
	if err != nil {
		return nil, err
	}
	floorChain := &chain{name: "floor", index: 0, netnses: netnses, portBase: 20000}
	var ours []*chain
	for i, name := range o.backends {
		ours = append(ours, &chain{name: name, index: i + 1, netnses: netnses, portBase: 30000 + 5000*i})
	}
	floor := filepath.Join("/opt/cni", "floor")
	if err := floorDir(o.tools, floor); err != nil {
		return nil, err
	}
	if only, err := rep.only(o, floor, floorChain, ours); only {
		return rep, err
	}
	for _, n := range o.sizes {
		for _, c := range ours { // each backend alone on the node, paired with the floor
			if err := rep.sequential(o, floor, []*chain{floorChain, c}, n); err != nil {
				return rep, err
			}
		}
	}
	if o.seqOnly {
		return rep, nil
	}
	netnses = trimNetns(o, netnses, append(ours, floorChain))
	return rep, rep.rest(o, floor, floorChain, ours, netnses)
}

// trimNetns removes the container namespaces only the sequential pairs
// used, and waits for the kernel to have torn them down. The bursts and
// the rows after them then run on a node that holds the namespaces they
// use, as a node rebooting with its pods, or one rolling them out, does:
// each namespace in which a plugin wrote a sysctl keeps a /proc/sys/net
// dentry that every later /proc/sys/net lookup of the node compares with
// (RESULTS.md round 12: 5 → 164 us per open with 1,000 of them; a burst of
// 110 ADDs paid 31 instead of 25 ms of CPU per pod beside them).
func trimNetns(o *options, netnses []string, chains []*chain) []string {
	keep := min(len(netnses), restNeeds(o))
	if keep == len(netnses) {
		return netnses
	}
	removeNetns(netnses[keep:])
	netnses = netnses[:keep]
	for _, c := range chains {
		c.netnses = netnses
	}
	waitQuiet()
	return netnses
}

// namespacesNeeded is the number of container namespaces the run's
// measurements use at most.
func namespacesNeeded(o *options) int {
	if o.criOnly {
		return 0 // containerd makes the pods' namespaces
	}
	maxN := restNeeds(o)
	switch {
	case o.seqOnly:
		maxN = 0
	case o.burstsOnly:
		return max(o.burstN, o.burstAll)
	case o.busyOnly:
		return o.busyN
	}
	for _, n := range o.sizes {
		maxN = max(maxN, n)
	}
	return maxN
}

// restNeeds is the number of container namespaces the rows after the
// sequential pairs use (rest; the in-process row takes the first size's).
func restNeeds(o *options) int {
	return max(o.sizes[0], o.parallel, o.burstN, o.burstAll, o.statusPods, o.busyN, rssSamples)
}

// rest runs every measurement after the sequential pairs.
func (rep *report) rest(o *options, floor string, floorChain *chain, ours []*chain, netnses []string) error {
	var errs []error
	if len(ours) > 0 {
		errs = append(errs, rep.inProcess(o, floor, netnses[:o.sizes[0]]), rep.peakMemory(o, netnses[:min(rssSamples, len(netnses))]))
		errs = append(errs, rep.status(o, floor, netnses), rep.parallel(o, ours))
		errs = append(errs, rep.bursts(o, floor, floorChain, ours), rep.busyNode(o, floor, floorChain, ours))
	}
	errs = append(errs, rep.hostLocal(o, netnses[0]))
	if o.criN > 0 {
		errs = append(errs, rep.criRow(o, floor))
	}
	return errors.Join(errs...)
}

// only runs the one measurement an -…-only flag asks for, if any.
func (rep *report) only(o *options, floor string, floorChain *chain, ours []*chain) (bool, error) {
	netnses := floorChain.netnses
	switch {
	case o.statusOnly:
		return true, rep.status(o, floor, netnses)
	case o.criOnly:
		return true, rep.criRow(o, floor)
	case o.rssOnly:
		return true, rep.peakMemory(o, netnses[:min(rssSamples, len(netnses))])
	case o.burstsOnly:
		return true, rep.bursts(o, floor, floorChain, ours)
	case o.busyOnly:
		return true, rep.busyNode(o, floor, floorChain, ours)
	}
	return false, nil
}

// sequential drives every chain through n containers, interleaved call by
// call, and records each chain's figures and its ratios to the floor.
func (rep *report) sequential(o *options, floor string, chains []*chain, n int) error {
	var tools []*cnitool
	for _, c := range chains {
		dir, confDir := o.bin, fmt.Sprintf("/etc/cni/bench-%s-%d", c.name, n)
		if c.name == "floor" {
			dir = floor
		}
		if err := writeConf(confDir, c.conf(fmt.Sprintf("/var/lib/cni/bench-%s-%d", c.name, n))); err != nil {
			return err
		}
		tools = append(tools, &cnitool{tool: filepath.Join(o.tools, "cnitool"), pluginDir: dir, confDir: confDir, network: c.network()})
	}
	fmt.Fprintf(os.Stderr, "cnibench: %d containers per chain through cnitool, chains interleaved...\n", n)
	samples, err := interleaved(tools, chains, n)
	var floorStats *scenario
	for k, c := range chains {
		s := &scenario{Chain: c.name, Client: "cnitool", N: n, Verbs: map[string]Stats{}, CPU: map[string]Stats{}}
		if c.name == "floor" {
			s.Chain = "floor (paired with " + chains[len(chains)-1].name + ")"
		}
		for _, v := range verbs {
			s.Verbs[v] = summarise(samples[k][v])
			s.CPU[v] = summarise(samples[k]["cpu-"+v])
		}
		if c.name == "floor" {
			floorStats = s
		} else if floorStats != nil {
			s.ToFloor = ratios(s, floorStats)
		}
		rep.Scenarios = append(rep.Scenarios, s)
	}
	return err
}

func ratios(s, floor *scenario) map[string]float64 {
	out := map[string]float64{}
	s.GrowthOverFloor = map[string]float64{}
	for _, v := range verbs {
		if f := floor.Verbs[v].Median; f > 0 {
			out[v] = s.Verbs[v].Median / f
		}
		if g := floor.Verbs[v].Growth; g > 0 {
			s.GrowthOverFloor[v] = s.Verbs[v].Growth / g
		}
	}
	return out
}

// inProcess measures each backend through libcni in this process.
func (rep *report) inProcess(o *options, floor string, netnses []string) error {
	m := &meteredExec{peakKB: map[string]map[string]int64{}, times: map[string]map[string][]time.Duration{}}
	var errs []error
	var floorStats *scenario
	for _, name := range append([]string{"floor"}, o.backends...) {
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, %d containers through libcni in-process...\n", name, len(netnses))
		c := &chain{name: name, index: 9}
		conf := c.conf("/var/lib/cni/bench-inproc-" + name)
		m.label = name
		dir := o.bin
		if name == "floor" {
			dir = floor
		}
		samples, err := inProcess(dir, conf, netnses, m)
		s := &scenario{Chain: name, Client: "libcni", N: len(netnses), Verbs: map[string]Stats{}}
		for _, v := range verbs {
			s.Verbs[v] = summarise(samples[v])
		}
		if name == "floor" {
			floorStats = s
		} else {
			s.ToFloor = ratios(s, floorStats)
		}
		rep.Scenarios = append(rep.Scenarios, s)
		errs = append(errs, err)
	}
	for key := range m.times {
		if strings.HasPrefix(key, "floor/") {
			delete(m.times, key)
		}
	}
	rep.PerPlugin = map[string]map[string]float64{}
	for key, byVerb := range m.times {
		rep.PerPlugin[key] = map[string]float64{}
		for verb, ds := range byVerb {
			rep.PerPlugin[key][verb] = summarise(ds).Median
		}
	}
	return errors.Join(errs...)
}

func (rep *report) parallel(o *options, ours []*chain) error {
	for _, c := range ours {
		confDir := "/etc/cni/bench-parallel-" + c.name
		if err := writeConf(confDir, c.conf("/var/lib/cni/bench-parallel-"+c.name)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, %d parallel ADDs then DELs...\n", c.name, o.parallel)
		tool := &cnitool{tool: filepath.Join(o.tools, "cnitool"), pluginDir: o.bin, confDir: confDir, network: c.network()}
		errs := tool.parallel(c.netnses[:o.parallel], c.portBase)
		rep.ParallelErrors[c.name] = len(errs)
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
	fmt.Fprintf(os.Stderr, "cnibench: host-local's first call on %d reference leases just written to disk...\n", o.leases)
	up, err := upgradeAtScale(o.bin, netns, o.leases)
	rep.Upgrade = up
	return err
}

// stateOnDisk puts /var/lib/cni (leases, the runtime's result cache) on
// the disk, as on a node, for the whole run: the sandbox gives it a tmpfs,
// where creating and removing files costs a fraction of what it costs on
// ext4. It binds a fresh directory under /var/tmp over it, in the
// sandbox's private mount namespace, and returns what undoes that.
func stateOnDisk() (func(), error) {
	dir, err := os.MkdirTemp("/var/tmp", "cnibench-state-")
	if err != nil {
		return nil, err
	}
	if err := syscall.Mount(dir, "/var/lib/cni", "", syscall.MS_BIND, ""); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("binding %s over /var/lib/cni: %w", dir, err)
	}
	return func() {
		if err := syscall.Unmount("/var/lib/cni", syscall.MNT_DETACH); err != nil {
			fmt.Fprintln(os.Stderr, "cnibench: unmounting /var/lib/cni:", err)
		}
		os.RemoveAll(dir)
	}, nil
}

// removeLogs removes the per-call logs the "logged" chain wrote on disk.
func removeLogs() {
	logs, _ := filepath.Glob("/var/tmp/cnibench-*.log*") // the pattern is well formed
	for _, l := range logs {
		os.Remove(l)
	}
}

// Burst is N pods started K at a time, then deleted the same way.
type Burst struct {
	Chain       string  `json:"chain"`
	N           int     `json:"n"`
	K           int     `json:"k"`
	Check       bool    `json:"add_then_check,omitempty"`
	AddS        float64 `json:"add_s"`
	DelS        float64 `json:"del_s"`
	FloorAddS   float64 `json:"floor_add_s"`
	FloorDelS   float64 `json:"floor_del_s"`
	AddCPU      float64 `json:"add_cpu_ms_per_pod"`
	DelCPU      float64 `json:"del_cpu_ms_per_pod"`
	FloorAddCPU float64 `json:"floor_add_cpu_ms_per_pod"`
	FloorDelCPU float64 `json:"floor_del_cpu_ms_per_pod"`
	// The same from the run's cgroup (-cgroup-cpu), helpers included.
	AddGroupCPU      float64 `json:"add_cgroup_cpu_ms_per_pod,omitempty"`
	DelGroupCPU      float64 `json:"del_cgroup_cpu_ms_per_pod,omitempty"`
	FloorAddGroupCPU float64 `json:"floor_add_cgroup_cpu_ms_per_pod,omitempty"`
	FloorDelGroupCPU float64 `json:"floor_del_cgroup_cpu_ms_per_pod,omitempty"`
	// Each phase's processes by command name, per pod (-taskstats-fd).
	AddProcs      []PerPod `json:"add_processes,omitempty"`
	DelProcs      []PerPod `json:"del_processes,omitempty"`
	FloorAddProcs []PerPod `json:"floor_add_processes,omitempty"`
	FloorDelProcs []PerPod `json:"floor_del_processes,omitempty"`
	// Each pod's DEL call in the DEL phase, start to answer.
	DelCalls      Stats `json:"del_calls"`
	FloorDelCalls Stats `json:"floor_del_calls"`
	Errors        int   `json:"errors"`
	FloorErrors   int   `json:"floor_errors"`
}

// burstShape is one kind of burst: n pods, k at a time, ADD alone or ADD
// then CHECK.
type burstShape struct {
	n, k  int
	check bool
}

// burstShapes are a drain or rollout (o.burstN, o.burstK at a time) and a
// node's reboot (o.burstAll at once), each with ADD alone and with ADD then
// CHECK (CRI-O's pattern).
func burstShapes(o *options, maxN int) []burstShape {
	var out []burstShape
	for _, nk := range [][2]int{{o.burstN, o.burstK}, {o.burstAll, o.burstAll}} {
		if n := min(nk[0], maxN); n > 0 {
			out = append(out, burstShape{n, min(nk[1], n), false}, burstShape{n, min(nk[1], n), true})
		}
	}
	return out
}

// bursts runs each burst of each of our chains right after the floor's.
func (rep *report) bursts(o *options, floorDir string, floor *chain, ours []*chain) error {
	for _, c := range ours {
		for _, sh := range burstShapes(o, len(floor.netnses)) {
			if err := rep.burst(o, floorDir, floor, c, sh); err != nil {
				return err
			}
		}
	}
	return nil
}

// burst runs one burst on the floor, then on c.
func (rep *report) burst(o *options, floorDir string, floor, c *chain, sh burstShape) error {
	b := &Burst{Chain: c.name, N: sh.n, K: sh.k, Check: sh.check}
	fmt.Fprintf(os.Stderr, "cnibench: burst of %d pods, %d at a time (check %v), floor then %s...\n", sh.n, sh.k, sh.check, c.name)
	for _, side := range []*chain{floor, c} {
		confDir := "/etc/cni/bench-burst-" + side.name
		if err := writeConf(confDir, side.conf("/var/lib/cni/bench-burst-"+side.name)); err != nil {
			return err
		}
		dir := o.bin
		if side == floor {
			dir = floorDir
		}
		tool := &cnitool{tool: filepath.Join(o.tools, "cnitool"), pluginDir: dir, confDir: confDir, network: side.network(), cgroupCPU: o.cgroupCPU, exits: o.exits}
		ph, errs := tool.burst(side.netnses[:sh.n], side.portBase, sh.k, sh.check)
		if side == floor {
			b.FloorAddS, b.FloorDelS, b.FloorErrors = ph.add.Seconds(), ph.del.Seconds(), len(errs)
			b.FloorAddCPU, b.FloorDelCPU = ph.addCPU, ph.delCPU
			b.FloorAddGroupCPU, b.FloorDelGroupCPU = ph.addGroupCPU, ph.delGroupCPU
			b.FloorDelCalls = ph.delCalls
			b.FloorAddProcs, b.FloorDelProcs = ph.addProcs, ph.delProcs
		} else {
			b.AddS, b.DelS, b.Errors = ph.add.Seconds(), ph.del.Seconds(), len(errs)
			b.AddCPU, b.DelCPU = ph.addCPU, ph.delCPU
			b.AddGroupCPU, b.DelGroupCPU = ph.addGroupCPU, ph.delGroupCPU
			b.DelCalls = ph.delCalls
			b.AddProcs, b.DelProcs = ph.addProcs, ph.delProcs
		}
		for i, err := range errs {
			if i < 3 {
				fmt.Fprintln(os.Stderr, "cnibench: burst:", err)
			}
		}
	}
	rep.Bursts = append(rep.Bursts, b)
	return nil
}

// rssSamples is how many containers the memory pass attaches per chain.
const rssSamples = 10

// peakMemory attaches a few containers per chain through libcni again,
// each plugin run under GNU time, and keeps each plugin's peak resident set
// per verb (see meteredExec). Without GNU time it measures nothing and says
// so.
func (rep *report) peakMemory(o *options, netnses []string) error {
	const via = "/usr/bin/time"
	if _, err := os.Stat(via); err != nil {
		fmt.Fprintln(os.Stderr, "cnibench: no GNU time (Debian package time): peak memory not measured")
		return nil
	}
	m := &meteredExec{peakKB: map[string]map[string]int64{}, times: map[string]map[string][]time.Duration{}, rssVia: via}
	var errs []error
	for _, name := range o.backends {
		fmt.Fprintf(os.Stderr, "cnibench: %s chain, peak memory of each plugin over %d containers...\n", name, len(netnses))
		c := &chain{name: name, index: 9}
		_, err := inProcess(o.bin, c.conf("/var/lib/cni/bench-rss-"+name), netnses, m)
		errs = append(errs, err)
	}
	rep.PeakKB = m.peakKB
	return errors.Join(errs...)
}

// criRow measures the runtime's view (package crirow) with our plugins,
// the reference's and the floor's.
func (rep *report) criRow(o *options, floor string) error {
	rows, err := crirow.Measure(crirow.Options{N: o.criN, K: o.criK, Ours: o.bin, Reference: o.reference, Floor: floor, Conflist: o.conflist})
	rep.CRI = rows
	return err
}
