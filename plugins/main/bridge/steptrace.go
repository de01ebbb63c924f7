package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/skel"
)

// traceEnv names the environment variable that makes the plugin print how
// long each step of a command took to stderr (see README, "Speed").
const traceEnv = "CNISUITE_BRIDGE_TRACE"

// stepTimer times named steps for the per-call log (pkg/calllog) and, when
// tracing is on, prints each on stderr as it ends; nil times nothing.
type stepTimer struct {
	mu    sync.Mutex
	w     io.Writer // nil unless tracing
	log   *calllog.Call
	start time.Time
}

// newStepTimer returns a timer recording into log and, when traceEnv is
// set to 1, writing to w; nil when neither wants the steps.
func newStepTimer(a *skel.CmdArgs) *stepTimer {
	w, log := a.Stderr, a.Log
	if a.Getenv(traceEnv) != "1" {
		w = nil
	}
	if w == nil && log == nil {
		return nil
	}
	return &stepTimer{w: w, log: log, start: time.Now()}
}

// step returns a function that, called at the end of a step, records its
// duration and, when tracing, prints it with its end as an offset from the
// command's start.
func (t *stepTimer) step(name string) func() {
	if t == nil {
		return func() {}
	}
	begin := time.Now()
	logged := t.log.Step(name)
	return func() {
		logged()
		if t.w == nil {
			return
		}
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		fmt.Fprintf(t.w, "bridge: %-22s %7.3f ms (ends at %7.3f ms)\n", name,
			float64(now.Sub(begin).Microseconds())/1000, float64(now.Sub(t.start).Microseconds())/1000)
	}
}
