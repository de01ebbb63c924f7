package invoke

import (
	"bytes"
	"os"
	"sync"

	"cnisuite/pkg/skel"
)

// Running a delegate in the caller's process.
//
// Starting a Go plugin process costs a few milliseconds of CPU and of wall
// time, more than host-local's whole work on most calls. Bridge's IPAM
// plugin is, in most configurations, the host-local built with it, whose
// code bridge carries: the build records host-local's Go build ID in bridge
// (make build and scripts/release.sh pass it with -X), and when the binary
// Delegate finds on CNI_PATH has exactly that ID — the same build, byte for
// byte — Delegate runs the plugin inside the calling process, with the
// environment and stdin the binary would have had, and reads its stdout and
// exit status as it would the process's. Any other binary under that name
// (the reference's host-local, another version of ours, a wrapper script)
// is started as always, and so is every delegate of a bridge built without
// the ID (plain go build). CNISUITE_NO_INPROCESS=1 in the environment
// starts the binary in every case.

var inProcess struct {
	sync.Mutex
	byType map[string]registered
}

type registered struct {
	buildID string // Go build ID of the binary p stands for
	plugin  *skel.Plugin
}

// InProcess lets Delegate run p, inside this process, for plugin type
// name, when the binary it finds for name has Go build ID buildID; an empty
// buildID registers nothing.
func InProcess(name, buildID string, p *skel.Plugin) {
	if buildID == "" {
		return
	}
	inProcess.Lock()
	defer inProcess.Unlock()
	if inProcess.byType == nil {
		inProcess.byType = map[string]registered{}
	}
	inProcess.byType[name] = registered{buildID: buildID, plugin: p}
}

// registeredPlugin returns the plugin registered for pluginType, whatever
// binary CNI_PATH holds, or nil.
func registeredPlugin(pluginType string) *skel.Plugin {
	inProcess.Lock()
	defer inProcess.Unlock()
	return inProcess.byType[pluginType].plugin
}

// inProcessPlugin returns the plugin to run in place of the binary at path,
// or nil when the binary must be started.
func inProcessPlugin(a *skel.CmdArgs, pluginType, path string) *skel.Plugin {
	inProcess.Lock()
	r, ok := inProcess.byType[pluginType]
	inProcess.Unlock()
	if !ok || a.Getenv("CNISUITE_NO_INPROCESS") == "1" {
		return nil
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
		return nil // exec would refuse it: let it
	}
	if id, err := buildID(path); err != nil || id != r.buildID {
		return nil
	}
	return r.plugin
}

// runInProcess runs p as run would run its binary: env, stdin, stdout,
// stderr and an exit status, which it turns into the same outcome.
func runInProcess(p *skel.Plugin, path string, env []string, stdin []byte, a *skel.CmdArgs) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	var exitErr error
	if p.RunConfig(env, stdin, &stdout, &stderr) != 0 {
		exitErr = errExitStatus1
	}
	return outcome(path, &stdout, &stderr, exitErr, a)
}
