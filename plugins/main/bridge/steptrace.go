package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// traceEnv names the environment variable that makes the plugin print how
// long each step of a command took to stderr (see README, "Speed").
const traceEnv = "CNISUITE_BRIDGE_TRACE"

// stepTimer reports the duration of named steps when tracing is on; the
// zero value (or nil) reports nothing.
type stepTimer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

// newStepTimer returns a timer writing to w when traceEnv is set to 1.
func newStepTimer(w io.Writer) *stepTimer {
	if os.Getenv(traceEnv) != "1" || w == nil {
		return nil
	}
	return &stepTimer{w: w, start: time.Now()}
}

// step returns a function that, called at the end of a step, prints its
// duration and its end as an offset from the command's start.
func (t *stepTimer) step(name string) func() {
	if t == nil {
		return func() {}
	}
	begin := time.Now()
	return func() {
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		fmt.Fprintf(t.w, "bridge: %-22s %7.3f ms (ends at %7.3f ms)\n", name,
			float64(now.Sub(begin).Microseconds())/1000, float64(now.Sub(t.start).Microseconds())/1000)
	}
}
