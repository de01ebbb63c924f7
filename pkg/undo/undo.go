// Package undo is the cleanup of a half-done command: each step that
// succeeds pushes its inverse, and a failure runs them, last first.
package undo

import (
	"errors"
	"fmt"
	"sync"
)

// Stack holds the inverses of the steps done so far. Steps running
// concurrently may push. The zero value is ready to use.
type Stack struct {
	mu    sync.Mutex
	steps []step
}

type step struct {
	what string
	fn   func() error
}

// Push records the inverse of a step that just succeeded; what names the
// step in errors ("veth veth1234").
func (s *Stack) Push(what string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step{what, fn})
}

// Run undoes every recorded step, last first, even when one fails, and
// returns every failure. The stack is empty afterwards.
func (s *Stack) Run() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		if err := s.steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("undoing %s: %w", s.steps[i].what, err))
		}
	}
	s.steps = nil
	return errors.Join(errs...)
}
