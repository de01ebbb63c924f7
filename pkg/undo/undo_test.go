package undo

import (
	"errors"
	"strings"
	"testing"
)

func TestRunUndoesLastFirstAndReportsEveryFailure(t *testing.T) {
	var s Stack
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		s.Push(name, func() error {
			order = append(order, name)
			if name != "b" {
				return errors.New(name + " failed")
			}
			return nil
		})
	}
	err := s.Run()
	if got := strings.Join(order, ""); got != "cba" {
		t.Errorf("undo order = %q, want cba", got)
	}
	if err == nil || !strings.Contains(err.Error(), "undoing a: a failed") || !strings.Contains(err.Error(), "undoing c: c failed") {
		t.Errorf("Run() = %v, want both failures named", err)
	}
	if err := s.Run(); err != nil || len(order) != 3 {
		t.Errorf("a second Run undid again: %v, %v", err, order)
	}
}
