// Package helper runs the helper processes a plugin starts from
// its own binary, and dispatches them explicitly: a plugin's main calls
// Dispatch first, with the helpers that binary has, and a test package whose
// code starts helpers does the same in its TestMain.
//
// A helper request is argv[1] == Flag and argv[2] == the helper's name, with
// an empty environment. A runtime never passes arguments to a CNI plugin (the
// protocol lives in the environment and stdin), so a request cannot be
// mistaken for a CNI call, nor a CNI call for a request: Dispatch refuses a
// request that carries CNI_COMMAND, and an unknown helper name is an error
// (exit status 2 and a message on stderr), never a silent success. A Go test
// binary that forgot its TestMain rejects Flag as an undefined flag instead
// of running its tests in the child.
//
// The one helper is the repair of pkg/resync, which cnisuite resync and
// cnisuite watch start and wait for. No CNI call starts a helper: a plugin
// call leaves no process behind it (docs/operations.md, "What a call
// starts").
package helper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Flag is argv[1] of every helper request.
const Flag = "--cnisuite-helper"

// Func is the body of a helper: args are the request's arguments after the
// name, stdin is the pipe its starter may hold open.
type Func func(args []string, stdin io.Reader) error

// Set maps the helper names a binary answers to their bodies.
type Set map[string]Func

// ErrUnknown is returned by Run for a request naming no helper of the set.
var ErrUnknown = errors.New("unknown helper")

// ErrNotRequest is returned by Run for a request that also looks like a CNI
// call: helpers are started with an empty environment.
var ErrNotRequest = errors.New("helper request carries CNI_COMMAND")

// IsRequest reports whether args (os.Args) are a helper request.
func IsRequest(args []string) bool { return len(args) > 1 && args[1] == Flag }

// Run runs the helper args name and returns its exit status: 0 on success,
// 1 when the helper failed, 2 for a request that names no helper of set or
// comes with a CNI environment. Failures are written to stderr. handled is
// false, and nothing is run, when args are not a helper request.
func Run(args, env []string, stdin io.Reader, stderr io.Writer, set Set) (code int, handled bool) {
	if !IsRequest(args) {
		return 0, false
	}
	prog := filepath.Base(args[0])
	if len(args) < 3 {
		fmt.Fprintf(stderr, "%s: helper request without a name: %v\n", prog, ErrUnknown)
		return 2, true
	}
	name := args[2]
	for _, kv := range env {
		if strings.HasPrefix(kv, "CNI_COMMAND=") {
			fmt.Fprintf(stderr, "%s: helper %q: %v\n", prog, name, ErrNotRequest)
			return 2, true
		}
	}
	fn, ok := set[name]
	if !ok {
		fmt.Fprintf(stderr, "%s: helper %q: %v\n", prog, name, ErrUnknown)
		return 2, true
	}
	if err := fn(args[3:], stdin); err != nil {
		fmt.Fprintf(stderr, "%s: helper %q: %v\n", prog, name, err)
		return 1, true
	}
	return 0, true
}

// Dispatch runs the helper the process was started as and exits with its
// status; when the process is not a helper request it returns at once and
// the caller goes on as a plugin (or a test binary).
//
// A helper it runs takes the helper's name as its command name (what ps,
// top and the kernel's exit accounting show): started from
// /proc/self/exe, it would otherwise be "exe".
func Dispatch(set Set) {
	if IsRequest(os.Args) && len(os.Args) > 2 && set[os.Args[2]] != nil {
		nameProcess(os.Args[2])
	}
	if code, handled := Run(os.Args, os.Environ(), os.Stdin, os.Stderr, set); handled {
		os.Exit(code)
	}
}

// Command returns the command that runs helper name of this very binary
// (/proc/self/exe: the running executable even when its file was replaced)
// with args, in an empty environment.
func Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = append([]string{filepath.Base(os.Args[0]), Flag, name}, args...)
	cmd.Env = []string{}
	return cmd
}

// commLen is the longest command name the kernel keeps (TASK_COMM_LEN - 1).
const commLen = 15

// nameProcess sets the process's command name; a failure only leaves the
// old name.
func nameProcess(name string) {
	if len(name) > commLen {
		name = name[:commLen]
	}
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
}
