package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{nil, 2, "usage: cnisuite gc"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"-h"}, 0, "Usage of cnisuite:"},
		{[]string{"-version"}, 0, "(cnisuite "},
		{[]string{"gc"}, 2, "-bindir is required"},
		{[]string{"gc", "-h"}, 0, "Usage of cnisuite gc:"},
		{[]string{"resync", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"resync", "-records", "/nonexistent/records"}, 0, "no attachments recorded"},
		{[]string{"resync", "-bindir", "/opt/cni/bin:bin"}, 2, `"bin": not an absolute directory`},
	}
	for _, tc := range tests {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("cnisuite %q = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out)
		}
	}
}
