// Package skel is the plugin side of the CNI protocol: it reads the
// environment and stdin, checks them, negotiates the version, runs the
// plugin's function for the verb and prints its result or error.
package skel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/stack"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
)

// Suite is the suite's version, stamped at build time with
// -ldflags "-X cnisuite/pkg/skel.Suite=...".
var Suite = "dev"

// CmdArgs is what one invocation gives the plugin.
type CmdArgs struct {
	Command     string
	ContainerID string
	Netns       string
	IfName      string
	Args        string
	Path        string
	StdinData   []byte
	// Env is the whole environment, passed on to delegated plugins.
	Env []string
	// Stderr receives diagnostics, and delegated plugins' stderr.
	Stderr io.Writer
	// Log records the call's steps for the per-call log; nil (which
	// records nothing) unless the configuration names a logFile.
	Log *calllog.Call
}

// Getenv returns the value of key in the call's environment (the last one
// when it is set twice), "" when it is not set: plugins read their
// environment from the call, never from the process.
func (a *CmdArgs) Getenv(key string) string {
	for i := len(a.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(a.Env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// StepTimer returns a timer of the command's steps, recording into the
// call's log and, when the environment variable traceEnv is 1, printing
// each step, prefixed with prefix, to the call's stderr; nil when neither
// wants the steps.
func (a *CmdArgs) StepTimer(traceEnv, prefix string) *calllog.StepTimer {
	var trace io.Writer
	if a.Getenv(traceEnv) == "1" && a.Stderr != nil {
		trace = a.Stderr
	}
	return calllog.NewStepTimer(a.Log, trace, prefix)
}

// Plugin wires a plugin's verbs to the protocol. Every verb must be set: a
// plugin with nothing to do for GC or STATUS says so in its own function.
type Plugin struct {
	Name   string
	Add    func(ctx context.Context, a *CmdArgs) (*types.Result, error)
	Check  func(ctx context.Context, a *CmdArgs) error
	Del    func(ctx context.Context, a *CmdArgs) error
	GC     func(ctx context.Context, a *CmdArgs) error
	Status func(ctx context.Context, a *CmdArgs) error
}

// Main runs the plugin with the process's environment and standard streams
// and exits with the protocol's status.
func Main(p *Plugin) {
	os.Exit(p.Run(os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// Run runs one invocation and returns the exit status: 0 on success, 1
// after printing an error object on stdout.
func (p *Plugin) Run(env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return p.run(&invocation{env: env, stdin: stdin, stdout: stdout, stderr: stderr})
}

// RunConfig is Run with the network configuration already read: a plugin
// that runs another in its own process (pkg/invoke) hands over its bytes
// instead of a second copy. The plugin only reads them.
func (p *Plugin) RunConfig(env []string, config []byte, stdout, stderr io.Writer) int {
	return p.run(&invocation{env: env, config: config, haveConfig: true, stdout: stdout, stderr: stderr})
}

func (p *Plugin) run(inv *invocation) int {
	stack.Presize() // before the call's deep stacks (pkg/stack)
	inv.plugin, inv.vars = p, envMap(inv.env)
	if inv.vars["CNI_COMMAND"] == "" {
		fmt.Fprintln(inv.stderr, p.About())
		return 0
	}
	var cniErr *types.Error
	if err := inv.runGuarded(); err != nil {
		cniErr = types.ToError(err, inv.errVersion())
	}
	inv.finishLog(cniErr)
	if cniErr != nil {
		return printError(inv.stdout, cniErr)
	}
	return 0
}

// runGuarded runs the invocation and turns a panic on its goroutine into a
// code-999 error, so that the runtime still reads an error object instead
// of a Go stack. It is a safety net, not error handling: every input a
// runtime can send is meant to be refused with a proper code before it can
// panic, and the fuzzer in test/fuzz checks that this net is never reached.
func (inv *invocation) runGuarded() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &types.Error{
				Code:    types.CodeInternal,
				Msg:     fmt.Sprintf("internal error in plugin %s: %v", inv.plugin.Name, v),
				Details: "at " + panicSite() + "; please report this as a bug",
			}
		}
	}()
	return inv.run()
}

// panicSite returns file:line of the code that panicked: the first frame
// outside the runtime package, above the deferred recover.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return "unknown location"
		}
	}
}

// About is the line printed for an empty CNI_COMMAND.
func (p *Plugin) About() string {
	return fmt.Sprintf("CNI %s plugin (cnisuite %s); CNI protocol versions supported: %s",
		p.Name, Suite, strings.Join(version.All, ", "))
}

func printError(w io.Writer, e *types.Error) int {
	out, err := json.MarshalIndent(e, "", "    ")
	if err != nil {
		out = []byte(fmt.Sprintf(`{"code":%d,"msg":%q}`, types.CodeInternal, e.Msg))
	}
	if _, err := w.Write(append(out, '\n')); err != nil {
		return 1
	}
	return 1
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
