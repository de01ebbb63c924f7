package taskstats

import (
	"sort"
	"time"
)

// Usage is what the exit records count, for a thread or summed.
type Usage struct {
	CPU        time.Duration // on a CPU (sum_exec_runtime)
	Wait       time.Duration // runnable, waiting for a CPU
	Runs       uint64        // times put on a CPU
	MinorFault uint64
}

// Add adds v's counters to u's.
func (u *Usage) Add(v Usage) {
	u.CPU += v.CPU
	u.Wait += v.Wait
	u.Runs += v.Runs
	u.MinorFault += v.MinorFault
}

// Process is the threads of one process summed.
type Process struct {
	Comm       string // the main thread's (a thread's when the main one is not among the records)
	TGID, PPID uint32
	Threads    int
	PeakRSSKB  uint64
	Usage
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
	g := grouping[uint32, Process]{}
	for _, t := range threads {
		p := g.slot(t.TGID, func() Process { return Process{Comm: t.Comm, TGID: t.TGID, PPID: t.PPID} })
		if t.PID == t.TGID {
			p.Comm, p.PPID = t.Comm, t.PPID
		}
		p.Threads++
		p.Add(t.Usage)
		p.PeakRSSKB = max(p.PeakRSSKB, t.PeakRSSKB)
	}
	return g.out
}

func foldForks(procs []Process) []Process {
	index := map[uint32]int{}
	for i, p := range procs {
		index[p.TGID] = i
	}
	var keep []uint32
	for _, p := range procs {
		i, ok := index[p.PPID]
		if p.Threads != 1 || !ok || procs[i].Comm != p.Comm {
			keep = append(keep, p.TGID)
			continue
		}
		procs[i].Add(p.Usage)
	}
	out := make([]Process, len(keep))
	for i, tgid := range keep {
		out[i] = procs[index[tgid]]
	}
	return out
}

// Command is the processes of one command name summed.
type Command struct {
	Comm      string
	Processes int
	Usage
}

// ByCommand sums processes by command name, most CPU first.
func ByCommand(procs []Process) []Command {
	g := grouping[string, Command]{}
	for _, p := range procs {
		c := g.slot(p.Comm, func() Command { return Command{Comm: p.Comm} })
		c.Processes++
		c.Add(p.Usage)
	}
	sort.SliceStable(g.out, func(a, b int) bool { return g.out[a].CPU > g.out[b].CPU })
	return g.out
}

// grouping collects one T per key, in the order the keys first appear.
type grouping[K comparable, T any] struct {
	index map[K]int
	out   []T
}

// slot returns key's T, made by fresh when key is new.
func (g *grouping[K, T]) slot(key K, fresh func() T) *T {
	if g.index == nil {
		g.index = map[K]int{}
	}
	i, ok := g.index[key]
	if !ok {
		i = len(g.out)
		g.index[key] = i
		g.out = append(g.out, fresh())
	}
	return &g.out[i]
}
