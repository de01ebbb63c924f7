package calllog

import (
	"bytes"
	"regexp"
	"testing"
)

func TestStepTimerTraces(t *testing.T) {
	if NewStepTimer(nil, nil, "bridge") != nil {
		t.Errorf("NewStepTimer(no log, no trace) is not nil")
	}
	var nilTimer *StepTimer
	nilTimer.Step("open")() // a nil timer times nothing and does not panic
	var out bytes.Buffer
	NewStepTimer(nil, &out, "bridge").Step("ensureBridge")()
	if !regexp.MustCompile(`^bridge: ensureBridge +[0-9.]+ ms \(ends at +[0-9.]+ ms\)\n$`).Match(out.Bytes()) {
		t.Errorf("trace line = %q, want 'bridge: ensureBridge <n> ms (ends at <n> ms)'", out.String())
	}
}
