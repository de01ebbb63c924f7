package taskstats

import (
	"sort"
	"time"
)

// Process is the threads of one process summed.
type Process struct {
	Comm       string // the main thread's (a thread's when the main one is not among the records)
	TGID, PPID uint32
	Threads    int
	CPU, Wait  time.Duration
	Runs       uint64
	MinorFault uint64
	PeakRSSKB  uint64
}

// Processes sums threads by process, in the order their first thread
// appears. A single-threaded child of a process of its own name — a fork
// that never ran a program: Go's os package clones one such child in each
// process before its first real one, to check that clone(CLONE_PIDFD)
// works — is counted in its parent.
func Processes(threads []Thread) []Process {
	return foldForks(byProcess(threads))
}

func byProcess(threads []Thread) []Process {
	index := map[uint32]int{}
	var out []Process
	for _, t := range threads {
		i, ok := index[t.TGID]
		if !ok {
			i = len(out)
			index[t.TGID] = i
			out = append(out, Process{Comm: t.Comm, TGID: t.TGID, PPID: t.PPID})
		}
		p := &out[i]
		if t.PID == t.TGID {
			p.Comm, p.PPID = t.Comm, t.PPID
		}
		p.Threads++
		p.CPU += t.CPU
		p.Wait += t.Wait
		p.Runs += t.Runs
		p.MinorFault += t.MinorFault
		p.PeakRSSKB = max(p.PeakRSSKB, t.PeakRSSKB)
	}
	return out
}

func foldForks(procs []Process) []Process {
	index := map[uint32]int{}
	for i, p := range procs {
		index[p.TGID] = i
	}
	keep := procs[:0:0]
	for _, p := range procs {
		i, ok := index[p.PPID]
		if p.Threads != 1 || !ok || procs[i].Comm != p.Comm {
			keep = append(keep, p)
			continue
		}
		parent := &procs[i]
		parent.CPU += p.CPU
		parent.Wait += p.Wait
		parent.Runs += p.Runs
		parent.MinorFault += p.MinorFault
	}
	// keep holds copies made before their parents took their forks in
	for i, p := range keep {
		keep[i] = procs[index[p.TGID]]
	}
	return keep
}

// Command is the processes of one command name summed.
type Command struct {
	Comm       string
	Processes  int
	CPU, Wait  time.Duration
	Runs       uint64
	MinorFault uint64
}

// ByCommand sums processes by command name, most CPU first.
func ByCommand(procs []Process) []Command {
	index := map[string]int{}
	var out []Command
	for _, p := range procs {
		i, ok := index[p.Comm]
		if !ok {
			i = len(out)
			index[p.Comm] = i
			out = append(out, Command{Comm: p.Comm})
		}
		c := &out[i]
		c.Processes++
		c.CPU += p.CPU
		c.Wait += p.Wait
		c.Runs += p.Runs
		c.MinorFault += p.MinorFault
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].CPU > out[b].CPU })
	return out
}
