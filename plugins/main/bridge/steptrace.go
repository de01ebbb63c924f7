package main

import (
	"io"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/skel"
)

// traceEnv names the environment variable that makes the plugin print how
// long each step of a command took to stderr (see README, "Speed").
const traceEnv = "CNISUITE_BRIDGE_TRACE"

// newStepTimer returns a timer recording into the call's log and, when
// traceEnv is set to 1, writing to its stderr; nil when neither wants the
// steps.
func newStepTimer(a *skel.CmdArgs) *calllog.StepTimer {
	var trace io.Writer
	if a.Getenv(traceEnv) == "1" && a.Stderr != nil {
		trace = a.Stderr
	}
	return calllog.NewStepTimer(a.Log, trace, "bridge")
}
