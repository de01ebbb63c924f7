package main

import (
	"testing"
	"time"

	"cnisuite/test/bench/taskstats"
)

// perPodRows lists the chain's commands per pod, most CPU first, and sums
// what ran less than once for every two pods as "other", but for helpers
// of ours.
func TestPerPodRows(t *testing.T) {
	ms := time.Millisecond
	var threads []taskstats.Thread
	for pod := uint32(0); pod < 4; pod++ {
		base := 1000 + 10*pod
		threads = append(threads,
			taskstats.Thread{Comm: "bridge", PID: base, TGID: base, Usage: taskstats.Usage{CPU: 8 * ms, Runs: 200}},
			taskstats.Thread{Comm: "bridge", PID: base + 1, TGID: base, Usage: taskstats.Usage{CPU: 2 * ms, Runs: 40}},
			taskstats.Thread{Comm: "tuning", PID: base + 2, TGID: base + 2, Usage: taskstats.Usage{CPU: 4 * ms, Runs: 90}},
		)
	}
	for pod := uint32(0); pod < 3; pod++ { // a helper most pods' calls started
		threads = append(threads, taskstats.Thread{Comm: "bridge-veth-del", PID: 2000 + pod, TGID: 2000 + pod, Usage: taskstats.Usage{CPU: ms, Runs: 8}})
	}
	threads = append(threads, taskstats.Thread{Comm: "cron", PID: 9, TGID: 9, Usage: taskstats.Usage{CPU: 2 * ms, Runs: 4}},
		taskstats.Thread{Comm: "cnisuite-x", PID: 3000, TGID: 3000, Usage: taskstats.Usage{CPU: 6 * ms, Runs: 40}})
	rows := perPodRows(threads, 4)
	want := []PerPod{
		{Comm: "bridge", Processes: 1, CPUMs: 10, Runs: 240},
		{Comm: "tuning", Processes: 1, CPUMs: 4, Runs: 90},
		{Comm: "cnisuite-x", Processes: 0.25, CPUMs: 1.5, Runs: 10},
		{Comm: "bridge-veth-del", Processes: 0.75, CPUMs: 0.75, Runs: 6},
		{Comm: "other", Processes: 0.25, CPUMs: 0.5, Runs: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("perPodRows = %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}
