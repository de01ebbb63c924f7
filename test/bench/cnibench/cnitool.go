package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cnitool drives one network through the cnitool binary, as a runtime
// would: one process per call, the plugins found in pluginDir.
type cnitool struct {
	tool      string
	pluginDir string
	confDir   string
	network   string
	cgroupCPU string   // the run's cgroup CPU counter ("": none), see cgroupCPU
	exits     *exitLog // the kernel's exit records (nil: none)
}

// run runs one verb for the container whose namespace is netns, with the
// given capability arguments, and returns how long it took.
func (c *cnitool) run(verb, netns, capArgs string) (time.Duration, error) {
	wall, _, err := c.runCPU(verb, netns, capArgs)
	return wall, err
}

// runCPU is run that also returns the CPU time (user + system) of cnitool
// and every process it waited for: the plugins and the IPAM they started,
// not the helpers a DEL leaves behind. Unlike the wall time, it hardly
// moves with what else the machine runs, so its growth is the steadier
// measure of work that grows with the pods on the node.
func (c *cnitool) runCPU(verb, netns, capArgs string) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(c.tool, verb, c.network, netns)
	cmd.Env = append(os.Environ(),
		"CNI_PATH="+c.pluginDir, "NETCONFPATH="+c.confDir, "CAP_ARGS="+capArgs, "CNI_IFNAME=eth0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start)
	if st := cmd.ProcessState; st != nil { // nil when cnitool did not start
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return wall, cpu, fmt.Errorf("cnitool %s %s: %v: %s", verb, netns, err, out.String())
	}
	return wall, cpu, nil
}

func portMapping(port int) string {
	return fmt.Sprintf(`{"portMappings":[{"hostPort":%d,"containerPort":80,"protocol":"tcp"}]}`, port)
}

// interleaved runs ADD for container i of every chain in turn, for every
// i, then CHECK the same way, then DEL: each chain sees the same machine
// at the same moment, so drift in the machine's speed cancels out of the
// ratios. It returns the latencies per chain and verb, and the CPU times
// under "cpu-" and the verb.
func interleaved(tools []*cnitool, chains []*chain, n int) ([]map[string][]time.Duration, error) {
	out := make([]map[string][]time.Duration, len(chains))
	for i := range out {
		out[i] = map[string][]time.Duration{}
	}
	for _, verb := range []string{"add", "check", "del"} {
		for i := 0; i < n; i++ {
			for k, c := range chains {
				d, cpu, err := tools[k].runCPU(verb, c.netnses[i], portMapping(c.portBase+i))
				if err != nil {
					return out, fmt.Errorf("%s chain: %w", c.name, err)
				}
				out[k][verb] = append(out[k][verb], d)
				out[k]["cpu-"+verb] = append(out[k]["cpu-"+verb], cpu)
			}
		}
	}
	return out, nil
}

// parallel runs ADD for every namespace at once, then DEL at once, and
// returns the errors.
func (c *cnitool) parallel(netnses []string, portBase int) []error {
	var errs []error
	for _, verb := range []string{"add", "del"} {
		ch := make(chan error, len(netnses))
		for i, n := range netnses {
			go func() {
				_, err := c.run(verb, n, portMapping(portBase+i))
				ch <- err
			}()
		}
		for range netnses {
			if err := <-ch; err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// burst starts every namespace's ADD (followed by its CHECK, as CRI-O
// sends them, when check is set) with at most k running at once, as a
// kubelet does on a drain, a rollout or a node's reboot (k = all), then
// the DELs the same way. It returns each phase's wall time, the CPU time
// per pod of the processes the phase waited for (cnitool, the plugins and
// their IPAM; detached helpers are not counted), of the run's cgroup and
// by process (both after the helpers the phase left are done), and the
// errors.
func (c *cnitool) burst(netnses []string, portBase, k int, check bool) (ph burstPhases, errs []error) {
	add := []string{"add"}
	if check {
		add = append(add, "check")
	}
	for _, verbs := range [][]string{add, {"del"}} {
		cpu0, group0, exits0 := childCPU(), c.groupCPU(), c.exits.mark()
		start := time.Now()
		perr, walls := c.pool(verbs, netnses, portBase, k)
		errs = append(errs, perr...)
		wall := time.Since(start)
		c.settle()
		perPod := ms(childCPU()-cpu0) / float64(len(netnses))
		groupPerPod := ms(c.groupCPU()-group0) / float64(len(netnses))
		procs, err := c.exits.perPod(exits0, len(netnses))
		if err != nil {
			errs = append(errs, err)
		}
		if verbs[0] == "add" {
			ph.add, ph.addCPU, ph.addGroupCPU, ph.addProcs = wall, perPod, groupPerPod, procs
		} else {
			ph.del, ph.delCPU, ph.delGroupCPU, ph.delProcs = wall, perPod, groupPerPod, procs
			ph.delCalls = summarise(walls)
		}
	}
	return ph, errs
}

// burstPhases are a burst's wall times and CPU per pod (ms): of the
// waited-for processes, and of the run's cgroup (0 without one).
type burstPhases struct {
	add, del                 time.Duration
	addCPU, delCPU           float64
	addGroupCPU, delGroupCPU float64
	delCalls                 Stats    // each pod's DEL, start to answer
	addProcs, delProcs       []PerPod // by command name (nil without exit records)
}

// groupCPU is the CPU time of the run's cgroup so far (0 without one).
func (c *cnitool) groupCPU() time.Duration {
	if c.cgroupCPU == "" {
		return 0
	}
	d, _ := cgroupCPU(c.cgroupCPU) // read once at start-up already: 0 is "not measured"
	return d
}

// cgroupCPU reads a cgroup's CPU counter: v1's cpuacct.usage (nanoseconds)
// or v2's cpu.stat (usage_usec). Every process in the cgroup counts,
// whoever waits for it: the helpers a plugin starts and leaves to init too.
func cgroupCPU(path string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	text := strings.TrimSpace(string(data))
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	ns, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: neither cpuacct.usage nor cpu.stat: %w", path, err)
	}
	return time.Duration(ns), nil
}

// childCPU is the user and system time of this process's waited-for
// children so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pool runs the verbs, in order, for every namespace on k workers, and
// returns the errors and each namespace's time through its verbs.
func (c *cnitool) pool(verbs []string, netnses []string, portBase, k int) ([]error, []time.Duration) {
	next := make(chan int)
	errc := make(chan error, len(netnses))
	walls := make([]time.Duration, len(netnses)) // each written by one worker, read after all reported
	for w := 0; w < k; w++ {
		go func() {
			for i := range next {
				var err error
				start := time.Now()
				for _, verb := range verbs {
					if _, err = c.run(verb, netnses[i], portMapping(portBase+i)); err != nil {
						break
					}
				}
				walls[i] = time.Since(start)
				errc <- err
			}
		}()
	}
	for i := range netnses {
		next <- i
	}
	close(next)
	var errs []error
	for range netnses {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errs, walls
}
