package main

import (
	"fmt"
	"strings"
	"time"

	"cnisuite/test/bench/taskstats"
)

// exitLog splits a phase's CPU by process with the kernel's exit records
// (-taskstats-fd, which make bench's "cnibench -taskstats-exec" passes);
// nil when they are not read.
type exitLog struct{ l *taskstats.Listener }

func (e *exitLog) mark() int {
	if e == nil {
		return 0
	}
	return e.l.Mark()
}

// PerPod is one command's processes of a phase, per pod.
type PerPod struct {
	Comm      string  `json:"comm"`
	Processes float64 `json:"processes"`
	CPUMs     float64 `json:"cpu_ms"`
	WaitMs    float64 `json:"runqueue_wait_ms"`
	Runs      float64 `json:"runs"`
	Faults    float64 `json:"minor_faults"`
}

// perPod sums the processes that exited since mark by command name, per
// pod of the phase (perPodRows). It returns nil without exit records, and
// an error when the kernel dropped some.
func (e *exitLog) perPod(mark, pods int) ([]PerPod, error) {
	if e == nil {
		return nil, nil
	}
	threads, lost := e.l.Since(mark)
	if lost > 0 {
		return nil, fmt.Errorf("exit records: the socket overflowed %d times", lost)
	}
	return perPodRows(threads, pods), nil
}

// perPodRows sums threads by process and processes by command name, per
// pod. A command with fewer processes than one for every two pods is not
// one of the chain's, and is summed as "other" — unless it is a process of
// ours (its name starts "cnisuite-"): none should run beside the plugins,
// and one that does gets a row of its own, however few its processes.
func perPodRows(threads []taskstats.Thread, pods int) []PerPod {
	var out []PerPod
	other := taskstats.Command{Comm: "other"}
	for _, c := range taskstats.ByCommand(taskstats.Processes(threads)) {
		if 2*c.Processes >= pods || strings.HasPrefix(c.Comm, "cnisuite-") {
			out = append(out, perPodRow(c, pods))
			continue
		}
		other.Processes += c.Processes
		other.Add(c.Usage)
	}
	if other.Processes > 0 {
		out = append(out, perPodRow(other, pods))
	}
	return out
}

func perPodRow(c taskstats.Command, pods int) PerPod {
	n := float64(pods)
	return PerPod{Comm: c.Comm, Processes: float64(c.Processes) / n, CPUMs: ms(c.CPU) / n,
		WaitMs: ms(c.Wait) / n, Runs: float64(c.Runs) / n, Faults: float64(c.MinorFault) / n}
}

// perPodText is a phase's processes for the report: name, processes per
// pod, CPU, run-queue wait and times put on a CPU, per pod.
func perPodText(rows []PerPod) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s ×%.1f %.1f ms (wait %.1f, %.0f runs)", r.Comm, r.Processes, r.CPUMs, r.WaitMs, r.Runs))
	}
	return strings.Join(parts, ", ")
}

// settle waits, up to 3 s, until what a phase left running is done:
// until neither the run's cgroup CPU nor the exit records move for 150 ms.
// Without either measurement it returns at once. The phase's wall time is
// taken before.
func (c *cnitool) settle() {
	if c.cgroupCPU == "" && c.exits == nil {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	cpu, exits := c.groupCPU(), c.exits.mark()
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		cpu2, exits2 := c.groupCPU(), c.exits.mark()
		if cpu2-cpu < time.Millisecond/2 && exits2 == exits {
			quiet++
		} else {
			quiet = 0
		}
		cpu, exits = cpu2, exits2
	}
}
