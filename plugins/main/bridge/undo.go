package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// undoStack holds the inverses of the steps of an ADD that succeeded; a
// failed ADD runs them in reverse. Steps running concurrently may push.
type undoStack struct {
	mu    sync.Mutex
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func() error
}

// push records the inverse of a step that just succeeded.
func (u *undoStack) push(what string, fn func() error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.steps = append(u.steps, undoStep{what, fn})
}

// run undoes every recorded step, last first, and reports failures to w:
// the ADD error is what the runtime sees.
func (u *undoStack) run(w io.Writer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var errs []error
	for i := len(u.steps) - 1; i >= 0; i-- {
		if err := u.steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("undoing %s: %w", u.steps[i].what, err))
		}
	}
	u.steps = nil
	if err := errors.Join(errs...); err != nil && w != nil {
		fmt.Fprintf(w, "bridge: cleanup after failed ADD: %v\n", err)
	}
}
