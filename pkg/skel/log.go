package skel

import (
	"encoding/json"
	"fmt"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/types"
)

// startLog begins the per-call log when the configuration names a log
// file. Settings that cannot be used cost a line on stderr, never the call:
// a DEL must not fail over its logging.
func (inv *invocation) startLog(conf []byte, a *CmdArgs) {
	var s calllog.Settings
	err := json.Unmarshal(conf, &s)
	if err == nil && s.File == "" && s.Level == "" {
		return
	}
	var level calllog.Level
	if err == nil {
		level, err = s.Parse()
	}
	if err != nil {
		fmt.Fprintf(inv.stderr, "%s: per-call log off: %v\n", inv.plugin.Name, err)
		return
	}
	inv.log = calllog.Start(s.File, level)
	a.Log = inv.log
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
