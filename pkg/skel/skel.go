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
	"strings"

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
	vars := envMap(env)
	if vars["CNI_COMMAND"] == "" {
		fmt.Fprintln(stderr, p.About())
		return 0
	}
	inv := &invocation{plugin: p, vars: vars, env: env, stdin: stdin, stdout: stdout, stderr: stderr}
	if err := inv.run(); err != nil {
		return printError(stdout, types.ToError(err, inv.errVersion()))
	}
	return 0
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
