package concurrent

import (
	"errors"
	"testing"
)

func TestRunKeepsOrder(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	release := make(chan struct{})
	errs := Run(
		func() error { <-release; return first }, // ends after the second
		func() error { defer close(release); return second },
		func() error { return nil },
	)
	if len(errs) != 3 || errs[0] != first || errs[1] != second || errs[2] != nil {
		t.Fatalf("Run = %v, want [first second <nil>]", errs)
	}
	if got := First(errs); got != first {
		t.Errorf("First = %v, want first", got)
	}
	if got := First([]error{nil, nil}); got != nil {
		t.Errorf("First(no error) = %v, want nil", got)
	}
}

func TestRunRaisesPanic(t *testing.T) {
	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("recovered %v, want the task's panic boom", v)
		}
	}()
	Run(func() error { panic("boom") }, func() error { return nil })
	t.Error("Run returned after a task panicked")
}
