// Package invoke runs delegated plugins (IPAM) the way a runtime would: found
// in CNI_PATH, with the caller's environment and the same configuration.
package invoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/undo"
)

// Find returns the path of the plugin named pluginType in the directories
// of cniPath: the first regular file of that name.
func Find(pluginType, cniPath string) (string, error) {
	if pluginType == "" {
		return "", types.Errorf(types.ErrInvalidConfig, "type: no plugin name given")
	}
	if strings.ContainsRune(pluginType, os.PathSeparator) || pluginType == "." || pluginType == ".." {
		return "", types.Errorf(types.ErrInvalidConfig, "type %q: a plugin name must not be a path", pluginType)
	}
	dirs := filepath.SplitList(cniPath)
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, pluginType)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", types.Errorf(types.ErrInvalidConfig, "type %q: %w in CNI_PATH %q", pluginType, ErrNotFound, cniPath)
}

// ErrNotFound is the cause of Find's error when no directory of CNI_PATH
// holds the plugin.
var ErrNotFound = errors.New("plugin not found")

// DelegateAdd runs ADD on the delegate and decodes its result.
func DelegateAdd(ctx context.Context, a *skel.CmdArgs, pluginType string, netconf []byte) (*types.Result, error) {
	out, err := Delegate(ctx, a, "ADD", pluginType, netconf)
	if err != nil {
		return nil, err
	}
	v, err := types.DecodeVersion(netconf)
	if err != nil {
		return nil, err
	}
	r, err := types.DecodeResult(out, v)
	if err != nil {
		return nil, fmt.Errorf("result of %s: %w", pluginType, err)
	}
	return r, nil
}

// AddIPAM runs ADD on the IPAM plugin pluginType and pushes its release
// (DEL, run even after ctx ends) on u. A result without addresses, or one
// the configuration's cniVersion cannot express, is an error; the lease
// is then released with the rest of u.
func AddIPAM(ctx context.Context, a *skel.CmdArgs, pluginType, cniVersion string, u *undo.Stack) (*types.Result, error) {
	res, err := DelegateAdd(ctx, a, pluginType, a.StdinData)
	if err != nil {
		return nil, fmt.Errorf("ipam %q: %w", pluginType, err)
	}
	u.Push("IPAM ADD", func() error { return DelegateDel(context.WithoutCancel(ctx), a, pluginType, a.StdinData) })
	if len(res.IPs) == 0 {
		return nil, types.Errorf(types.ErrInvalidConfig, "ipam %q: IPAM plugin returned missing IP config", pluginType)
	}
	if err := (&types.Result{IPs: res.IPs}).Expressible(cniVersion); err != nil {
		return nil, fmt.Errorf("ipam %q: %w", pluginType, err)
	}
	return res, nil
}

// DelegateCheck runs CHECK on the delegate.
func DelegateCheck(ctx context.Context, a *skel.CmdArgs, pluginType string, netconf []byte) error {
	_, err := Delegate(ctx, a, "CHECK", pluginType, netconf)
	return err
}

// DelegateDel runs DEL on the delegate. A delegate missing from CNI_PATH
// does not fail the teardown: the one this binary carries (host-local in
// bridge) runs in its place, since it reads the same files; any other is
// said on stderr and skipped, as it can release nothing (an ADD that
// failed for want of it leased nothing either).
func DelegateDel(ctx context.Context, a *skel.CmdArgs, pluginType string, netconf []byte) error {
	_, err := Delegate(ctx, a, "DEL", pluginType, netconf)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	if p := registeredPlugin(pluginType); p != nil {
		_, err = runInProcess(p, pluginType, withCommand(a.Env, "DEL"), netconf, a)
		return err
	}
	fmt.Fprintf(a.Stderr, "DEL goes on without IPAM: %v\n", err)
	return nil
}

// DelegateGC runs GC on the delegate.
func DelegateGC(ctx context.Context, a *skel.CmdArgs, pluginType string, netconf []byte) error {
	_, err := Delegate(ctx, a, "GC", pluginType, netconf)
	return err
}

// DelegateStatus runs STATUS on the delegate.
func DelegateStatus(ctx context.Context, a *skel.CmdArgs, pluginType string, netconf []byte) error {
	_, err := Delegate(ctx, a, "STATUS", pluginType, netconf)
	return err
}

// Delegate runs command on the plugin pluginType with the caller's
// environment (CNI_COMMAND replaced) and netconf on stdin, and returns its
// stdout. The delegate's stderr goes to the caller's. A delegate's error
// object comes back as a *types.Error, so its code passes through.
func Delegate(ctx context.Context, a *skel.CmdArgs, command, pluginType string, netconf []byte) ([]byte, error) {
	path, err := Find(pluginType, a.Path)
	if err != nil {
		return nil, err
	}
	env := withCommand(a.Env, command)
	if p := inProcessPlugin(a, pluginType, path); p != nil {
		return runInProcess(p, path, env, netconf, a)
	}
	var out []byte
	for attempt := 0; ; attempt++ {
		out, err = run(ctx, path, env, netconf, a)
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt >= 4 {
			break
		}
		select { // the binary is being replaced under us: wait and retry
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return out, err
}

func run(ctx context.Context, path string, env []string, stdin []byte, a *skel.CmdArgs) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	return outcome(path, &stdout, &stderr, cmd.Run(), a)
}

var errExitStatus1 = errors.New("exit status 1")

// outcome reads a delegate's end: its stdout on success; else the error
// object it printed, or what it said on stderr. Its stderr goes on to the
// caller's.
func outcome(path string, stdout, stderr *bytes.Buffer, runErr error, a *skel.CmdArgs) ([]byte, error) {
	if a.Stderr != nil && stderr.Len() > 0 {
		// Best effort: a broken stderr must not fail the delegation.
		_, _ = a.Stderr.Write(stderr.Bytes())
	}
	if runErr == nil {
		return stdout.Bytes(), nil
	}
	if errors.Is(runErr, syscall.ETXTBSY) {
		// exec(2) refused a binary being written: the *PathError keeps
		// the errno for Delegate's retry.
		return nil, fmt.Errorf("%s: %w", path, runErr)
	}
	if stdout.Len() > 0 {
		if e, err := types.DecodeError(stdout.Bytes()); err == nil {
			return nil, e
		}
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = runErr.Error()
	}
	return nil, fmt.Errorf("delegated plugin %s failed: %s", filepath.Base(path), msg)
}

func withCommand(env []string, command string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CNI_COMMAND=") {
			out = append(out, kv)
		}
	}
	return append(out, "CNI_COMMAND="+command)
}
