package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"cnisuite/test/sandbox"
)

// TestHostLocalInProcess: when the host-local on CNI_PATH is the build made
// with bridge, bridge runs it in its own process (the per-call log gives
// both lines bridge's pid); another build of host-local, or
// CNISUITE_NO_INPROCESS=1, is started as a process of its own. The lease
// is taken on ADD and released on DEL either way.
func TestHostLocalInProcess(t *testing.T) {
	sandbox.Require(t)
	pair := sandbox.BuildStamped(t, "inprocess-a", "./plugins/main/bridge", "./plugins/ipam/host-local")
	mixed := sandbox.BuildStamped(t, "inprocess-a", "./plugins/main/bridge")
	other := sandbox.BuildStamped(t, "inprocess-b", "./plugins/ipam/host-local")
	if err := os.Rename(filepath.Join(other, "host-local"), filepath.Join(mixed, "host-local")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir  string
		noInProc   bool
		wantShared bool
	}{
		{"same build", pair, false, true},
		{"another build of host-local", mixed, false, false},
		{"CNISUITE_NO_INPROCESS=1", pair, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noInProc {
				t.Setenv("CNISUITE_NO_INPROCESS", "1")
			}
			shared := addDelShares(t, tc.dir)
			for _, verb := range []string{"ADD", "DEL"} {
				if shared[verb] != tc.wantShared {
					t.Errorf("%s: host-local ran in bridge's process: %v, want %v", verb, shared[verb], tc.wantShared)
				}
			}
		})
	}
}

// addDelShares attaches a container with the plugins of dir and detaches
// it, checking the lease file on the way, and reports per verb whether
// host-local's log line has bridge's pid.
func addDelShares(t *testing.T, dir string) map[string]bool {
	data, logFile := t.TempDir(), filepath.Join(t.TempDir(), "calls.log")
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"inproc","plugins":[{"type":"bridge","bridge":"brinproc",
		"logFile":%q,"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.232.0.0/24"}]]}}]}`, logFile, data)
	sandbox.RemoveLinkAtEnd(t, "brinproc")
	rt := libcni.NewCNIConfigWithCacheDir([]string{dir}, t.TempDir(), nil)
	list := sandbox.ConfList(t, conf)
	rc := &libcni.RuntimeConf{ContainerID: "inproc", IfName: "eth0", NetNS: sandbox.NewNS(t).Path()}
	ctx := context.Background()
	if _, err := rt.AddNetworkList(ctx, list, rc); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	lease := filepath.Join(data, "inproc", "10.232.0.2")
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("after ADD: %v", err)
	}
	if err := rt.DelNetworkList(ctx, list, rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if _, err := os.Stat(lease); !os.IsNotExist(err) {
		t.Errorf("after DEL the lease file is still there (%v)", err)
	}
	return pidsShared(t, logFile)
}

// pidsShared reads the per-call log: per verb, whether host-local's line
// and bridge's carry the same pid.
func pidsShared(t *testing.T, logFile string) map[string]bool {
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct {
			Plugin, Verb string
			PID          int
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.PID == 0 {
			t.Fatalf("log line %q: %v (no pid)", l, err)
		}
		if pids[e.Verb] == nil {
			pids[e.Verb] = map[string]int{}
		}
		pids[e.Verb][e.Plugin] = e.PID
	}
	shared := map[string]bool{}
	for verb, by := range pids {
		if by["bridge"] == 0 || by["host-local"] == 0 {
			t.Fatalf("%s: log lines of bridge and host-local expected, got %v", verb, by)
		}
		shared[verb] = by["bridge"] == by["host-local"]
	}
	return shared
}
