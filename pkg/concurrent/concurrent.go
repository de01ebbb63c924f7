// Package concurrent runs a command's independent steps at the same time
// and gives back their errors in the order of the steps, so that a
// command reports the error its sequential order would have met first.
package concurrent

import (
	"sync"

	"cnisuite/pkg/stack"
)

// Run runs the tasks at once and returns their errors, in order. A task's
// panic is raised again on the caller's goroutine, where the skel's
// last-resort recover turns it into an error object.
func Run(tasks ...func() error) []error {
	errs := make([]error, len(tasks))
	panics := make([][]any, len(tasks))
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Add(1)
		go func() {
			stack.Presize()
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					panics[i] = []any{v}
				}
			}()
			errs[i] = task()
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p[0])
		}
	}
	return errs
}

// First returns the first non-nil error of errs, nil when there is none.
func First(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
