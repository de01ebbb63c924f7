package skel

import (
	"encoding/json"
	"errors"
	"fmt"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/types"
)

// startLog begins the per-call log when the configuration names a log
// file. Settings that cannot be used cost a line on stderr, never the call:
// a DEL must not fail over its logging.
func (inv *invocation) startLog(file, level json.RawMessage, a *CmdArgs) {
	if absent(file) && absent(level) {
		return
	}
	var s calllog.Settings
	err := errors.Join(unmarshalKey("logFile", file, &s.File), unmarshalKey("logLevel", level, &s.Level))
	var lv calllog.Level
	if err == nil {
		lv, err = s.Parse()
	}
	if err != nil {
		fmt.Fprintf(inv.stderr, "%s: per-call log off: %v\n", inv.plugin.Name, err)
		return
	}
	inv.log = calllog.Start(s.File, lv)
	a.Log = inv.log
}

// absent reports whether a key was left out or set to null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// unmarshalKey reads one log key, when present, naming it when it is not
// a string.
func unmarshalKey(key string, raw json.RawMessage, v *string) error {
	if absent(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %s: must be a string", key, raw)
	}
	return nil
}

// finishLog writes the call's log line, if logging is on; a failure to
// write it is reported on stderr only.
func (inv *invocation) finishLog(cniErr *types.Error) {
	if inv.log == nil {
		return
	}
	id := calllog.Identity{
		Plugin: inv.plugin.Name, Verb: inv.vars["CNI_COMMAND"], Network: inv.network,
		ContainerID: inv.vars["CNI_CONTAINERID"], Netns: inv.vars["CNI_NETNS"], IfName: inv.vars["CNI_IFNAME"],
		TraceParent: calllog.ValidTraceParent(inv.vars["TRACEPARENT"]),
	}
	out := calllog.Outcome{Result: inv.result}
	if cniErr != nil {
		out = calllog.Outcome{Code: cniErr.Code, Msg: cniErr.Error()}
	}
	if err := inv.log.Finish(id, out); err != nil {
		fmt.Fprintf(inv.stderr, "%s: per-call log: %v\n", inv.plugin.Name, err)
	}
}
