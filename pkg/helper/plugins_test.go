package helper_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/helper"
	"cnisuite/test/sandbox"
)

var oldVariables = []string{
	"CNISUITE_FIREWALL_LINGER_HELPER=1",
	"CNISUITE_BRIDGE_DELETE_NETNS=/proc/self/ns/net", "CNISUITE_BRIDGE_DELETE_INDEX=1",
}

// TestPluginsRefuseStrayRequests runs every plugin binary as a stray
// helper request would reach it: with the environment variables that once
// turned bridge and portmap into silent successes (now a CNI call is
// answered as one: VERSION prints the versions, a broken ADD fails), with
// an unknown helper (the sitter among them), and with a helper request that
// also carries a CNI command (both an error with a message).
func TestPluginsRefuseStrayRequests(t *testing.T) {
	bin := sandbox.Bin(t)
	tests := []struct {
		name   string
		args   []string
		env    []string
		stdin  string
		code   int    // -1: any non-zero status
		output string // what stdout or stderr must hold
	}{
		{"old_variables_version", nil, append([]string{"CNI_COMMAND=VERSION"}, oldVariables...), `{"cniVersion":"1.0.0"}`, 0, "supportedVersions"},
		{"old_variables_broken_add", nil, append([]string{"CNI_COMMAND=ADD"}, oldVariables...), `{}`, -1, `"code"`},
		{"unknown_helper", []string{helper.Flag, "bogus"}, nil, "", 2, "unknown helper"},
		{"request_with_cni_command", []string{helper.Flag, "cnisuite-repair"}, []string{"CNI_COMMAND=DEL"}, "", 2, "CNI_COMMAND"},
		// The sitter, a server a DEL once left behind (issue 41), is no
		// helper of any binary.
		{"no_sitter", []string{helper.Flag, "cnisuite-sitter", "cnisuite-sitter-1", "2000"}, nil, "", 2, "unknown helper"},
	}
	for _, plugin := range []string{"bridge", "portmap", "host-local", "tuning", "loopback"} {
		for _, tt := range tests {
			t.Run(plugin+"/"+tt.name, func(t *testing.T) {
				cmd := exec.Command(filepath.Join(bin, plugin), tt.args...)
				cmd.Env = tt.env
				cmd.Stdin = strings.NewReader(tt.stdin)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				_ = cmd.Run() // the status is checked below
				code := cmd.ProcessState.ExitCode()
				if code != tt.code && !(tt.code < 0 && code > 0) {
					t.Errorf("%s %q with env %q: exit %d, want %d; output %q", plugin, tt.args, tt.env, code, tt.code, out.String())
				}
				if !strings.Contains(out.String(), tt.output) {
					t.Errorf("%s %q with env %q: output %q, want it to hold %q", plugin, tt.args, tt.env, out.String(), tt.output)
				}
			})
		}
	}
}
