package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Where the runtimes' CNI calls are recorded on a CRI node: verbsDir holds
// one wrapper per plugin (the CNI bin dir the runtimes of 2026 run with),
// verbsLog what the runtime sent each, callLog the plugins' own per-call
// log (logFile in the conflists).
const (
	verbsDir = "/run/e2e/cni-verbs"
	verbsLog = "/run/e2e/cni-verbs.log"
	callLog  = "/run/e2e/cni-calls.log"
)

// writeVerbRecorders fills verbsDir with one wrapper per plugin: it
// appends the plugin's name, CNI_COMMAND, the cniVersion of the
// configuration on stdin and CNI_CONTAINERID to verbsLog, then runs our
// plugin with the same stdin and arguments. CNI_PATH is set back to the
// plugins' own directory, so bridge still finds host-local there (and runs
// it in its own process): verbsLog holds what the runtime sent, nothing more.
func (n *criNode) writeVerbRecorders() {
	n.T.Helper()
	for _, p := range plugins {
		script := fmt.Sprintf(`#!/bin/sh
in=$(cat)
v=$(printf '%%s' "$in" | grep -o '"cniVersion": *"[^"]*"' | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
printf '%%s %%s %%s %%s\n' %[1]s "$CNI_COMMAND" "${v:--}" "${CNI_CONTAINERID:--}" >>%[2]s
export CNI_PATH=/opt/cni/bin
exec /opt/cni/bin/%[1]s "$@" <<EOF
$in
EOF
`, p, verbsLog)
		n.WriteFile(verbsDir+"/"+p, []byte(script), 0o644)
		if err := os.Chmod(n.Path(verbsDir+"/"+p), 0o755); err != nil {
			n.T.Fatal(err)
		}
	}
}

// cniCall is one call a runtime sent, as the wrapper recorded it.
type cniCall struct {
	plugin, verb, version, container string
}

// parseCalls reads verbsLog's lines, in the order they were sent.
func parseCalls(log string) []cniCall {
	var calls []cniCall
	for _, line := range strings.Split(log, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 {
			calls = append(calls, cniCall{plugin: f[0], verb: f[1], version: f[2], container: f[3]})
		}
	}
	return calls
}

// sentCalls returns the calls the runtime has sent so far.
func (n *criNode) sentCalls() []cniCall {
	n.T.Helper()
	data, err := os.ReadFile(n.Path(verbsLog))
	if err != nil && !os.IsNotExist(err) {
		n.T.Fatal(err)
	}
	return parseCalls(string(data))
}

// callTable summarizes calls as "plugin verb cniVersion: count" lines,
// sorted: the table of what a runtime sends.
func callTable(calls []cniCall) []string {
	counts := map[string]int{}
	for _, c := range calls {
		counts[c.plugin+" "+c.verb+" "+c.version]++
	}
	var lines []string
	for k, v := range counts {
		lines = append(lines, fmt.Sprintf("%-40s %d", k, v))
	}
	slices.Sort(lines)
	return lines
}

// verbsOf lists, in order, the verbs a plugin got for one container.
func verbsOf(calls []cniCall, plugin, container string) []string {
	var verbs []string
	for _, c := range calls {
		if c.plugin == plugin && c.container == container {
			verbs = append(verbs, c.verb)
		}
	}
	return verbs
}

// pluginLogTable summarizes the plugins' own per-call log as
// "plugin verb: count (failed: count)" lines, sorted.
func pluginLogTable(log string) []string {
	type count struct{ all, failed int }
	counts := map[string]*count{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var l struct {
			Plugin, Verb string
			Code         uint
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		key := l.Plugin + " " + l.Verb
		if counts[key] == nil {
			counts[key] = &count{}
		}
		counts[key].all++
		if l.Code != 0 {
			counts[key].failed++
		}
	}
	var lines []string
	for k, c := range counts {
		lines = append(lines, fmt.Sprintf("%-24s %d (failed: %d)", k, c.all, c.failed))
	}
	slices.Sort(lines)
	return lines
}

// reportCalls prints, at the end of a runtime's test, what it sent (from
// the wrappers) and, when the conflists name a log, what the plugins
// logged (the per-call log): every verb the runtime sent our plugins, but
// VERSION (which carries no configuration to name a log), must be in it.
func (n *criNode) reportCalls(pluginLog bool) {
	n.T.Helper()
	calls := n.sentCalls()
	if len(calls) == 0 {
		n.T.Errorf("no CNI call of %s recorded in %s", n.flavor.name(), verbsLog)
	}
	n.T.Logf("CNI calls %s sent (plugin, verb, cniVersion: count):\n  %s", n.flavor.name(), strings.Join(callTable(calls), "\n  "))
	if !pluginLog {
		return
	}
	data, err := os.ReadFile(n.Path(callLog))
	if err != nil {
		n.T.Errorf("the plugins' per-call log: %v", err)
		return
	}
	logged := pluginLogTable(string(data))
	n.T.Logf("the plugins' per-call log %s (plugin, verb: count):\n  %s", callLog, strings.Join(logged, "\n  "))
	for _, c := range calls {
		if c.verb == "VERSION" || c.plugin == "loopback" {
			continue // loopback runs on the runtime's own configuration, without logFile
		}
		if !slices.ContainsFunc(logged, func(l string) bool { return strings.HasPrefix(l, c.plugin+" "+c.verb+" ") }) {
			n.T.Errorf("%s sent %s to %s, which the per-call log does not show", n.flavor.name(), c.verb, c.plugin)
		}
	}
}
