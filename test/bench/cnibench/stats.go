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
	// Growth is the mean of the last ten calls over the mean of the first ten.
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
		Median: ms(sorted[len(sorted)/2]),
		P95:    ms(sorted[(len(sorted)*95)/100-boolInt(len(sorted)%20 == 0)]),
	}
	if len(samples) >= 20 {
		s.Growth = mean(samples[len(samples)-10:]) / mean(samples[:10])
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return ms(sum) / float64(len(ds))
}
