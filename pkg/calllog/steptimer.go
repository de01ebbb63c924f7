package calllog

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// StepTimer times a command's named steps for its call record and, when
// tracing is on, prints each on a writer as it ends; a nil *StepTimer
// times nothing.
type StepTimer struct {
	mu     sync.Mutex
	w      io.Writer // nil unless tracing
	log    *Call
	prefix string
	start  time.Time
}

// NewStepTimer returns a timer recording into log and, when trace is
// non-nil, writing each step's line, starting with prefix, to trace; nil
// when neither wants the steps.
func NewStepTimer(log *Call, trace io.Writer, prefix string) *StepTimer {
	if trace == nil && log == nil {
		return nil
	}
	return &StepTimer{w: trace, log: log, prefix: prefix, start: time.Now()}
}

// Step returns a function that, called at the end of a step, records its
// duration and, when tracing, prints it with its end as an offset from the
// command's start. Steps may run concurrently.
func (t *StepTimer) Step(name string) func() {
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
		fmt.Fprintf(t.w, "%s: %-22s %7.3f ms (ends at %7.3f ms)\n", t.prefix, name,
			float64(now.Sub(begin).Microseconds())/1000, float64(now.Sub(t.start).Microseconds())/1000)
	}
}
