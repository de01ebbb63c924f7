package main

import (
	"sort"
	"time"
)

// Stats summarises the latencies of one verb in one scenario.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
	// Growth is the median of the last fifth of the calls over the median
	// of the first fifth (at least ten calls each): how a verb's cost moves
	// as the node fills up. Medians of a fifth, not means of ten, so that a
	// few slow calls do not move it: the floor's own growth, which must be
	// 1.00 on a quiet machine, shows how far to trust it.
	Growth float64 `json:"growth"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func summarise(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	s := Stats{
		N:      len(samples),
		Median: median(samples),
		P95:    ms(sorted[(len(sorted)*95)/100-boolInt(len(sorted)%20 == 0)]),
	}
	if len(samples) >= 20 {
		k := max(10, len(samples)/5)
		s.Growth = median(samples[len(samples)-k:]) / median(samples[:k])
	}
	return s
}

func median(ds []time.Duration) float64 {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return ms(sorted[len(sorted)/2])
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
