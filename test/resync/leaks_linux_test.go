package resync

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/records"
	"cnisuite/pkg/sysctl"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/test/sandbox"
)

// Issue 42's leaks and records as data, with the real binaries.

// gc runs GC of the node's network on each plugin of its list, as a
// runtime that lists no valid attachment does (CRI-O at start-up after
// its pods went), without libcni's DELs of the cached attachments first:
// what GC alone removes.
func (n *node) gc(t *testing.T) {
	t.Helper()
	for _, p := range n.list.Plugins {
		var conf map[string]any
		if err := json.Unmarshal(p.Bytes, &conf); err != nil {
			t.Fatal(err)
		}
		conf["name"], conf["cniVersion"] = n.name, n.list.CNIVersion
		conf["cni.dev/valid-attachments"] = []any{}
		stdin, err := json.Marshal(conf)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(sandbox.Bin(t), p.Network.Type))
		cmd.Env = []string{"CNI_COMMAND=GC", "CNI_PATH=" + sandbox.Bin(t), "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = bytes.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s GC: %v\n%s", p.Network.Type, err, out)
		}
	}
}

// A GC that drops the last pod of the node releases its sysctl holds:
// ip_forward (bridge's isGateway) and route_localnet (portmap) leave
// /run/sysctl.d/zz-cnisuite.conf, which goes with its last key. Before,
// the file stayed until a reboot, and resync kept writing it again.
func TestGCReleasesSysctlHolds(t *testing.T) {
	sandbox.Require(t)
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	base := heldBefore(t)
	n := newNode(t, "", 81)
	pod := n.add("pod-gc")
	if held, _ := heldLines(t); !strings.Contains(held, "net/ipv4/ip_forward = 1") || !strings.Contains(held, "route_localnet = 1") {
		t.Fatalf("%s after ADD holds\n%s\nwant ip_forward and route_localnet", keptFile, held)
	}
	n.gc(t)
	if held, has := heldLines(t); held != base || base == "" && has {
		t.Errorf("%s after GC dropped the pod holds\n%s\nwant what others held before it:\n%s", keptFile, held, base)
	}
	for _, plugin := range []string{"bridge", "portmap"} {
		if recs, err := (records.Store{}).List(plugin, n.name); err != nil || len(recs) != 0 {
			t.Errorf("%s records after GC: %+v, %v", plugin, recs, err)
		}
	}
	if err := n.rt.DelNetworkList(context.Background(), n.list, pod.rc); err != nil {
		t.Errorf("DEL after GC: %v", err)
	}
}

// A DEL killed after it removed the pod's records and before it released
// the holds (the records removed by hand here, the holds aged past the
// grace an ADD at work has) leaves holds no attachment needs: the next
// cnisuite resync releases them. Before, resync wrote the file again.
func TestResyncReleasesHoldsOfKilledDel(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	base := heldBefore(t)
	n := newNode(t, "", 82)
	pod := n.add("pod-killed")
	for _, plugin := range []string{"bridge", "portmap"} {
		file := filepath.Join(records.Dir, plugin, n.name, records.FileName(pod.id, "eth0"))
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	holds, _ := filepath.Glob(filepath.Join(sysctlkeep.HoldsDir, "*", "*"))
	for _, h := range holds {
		if err := os.Chtimes(h, old, old); err != nil {
			t.Fatal(err)
		}
	}
	out := sandbox.Run(t, tool, "resync")
	if held, has := heldLines(t); held != base || base == "" && has {
		t.Errorf("%s after resync (%q) holds\n%s\nwant what others held before the pod:\n%s", keptFile, out, held, base)
	}
	if err := n.rt.DelNetworkList(context.Background(), n.list, pod.rc); err != nil {
		t.Errorf("DEL: %v", err)
	}
}

// Records are data (issue 42): cnisuite resync, run as the node runs it
// (no -bindir: the plugins beside it), never runs a program a record
// names — neither its "binary" nor a "type" that is a path — reports the
// records it cannot use by their file, and repairs the pods whose records
// are good.
func TestResyncRunsNoRecordedProgram(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	n := newNode(t, "nftables", 83)
	pod := n.add("pod-data")
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	planted := filepath.Join(dir, "planted")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\n: >"+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	netDir := filepath.Join(records.Dir, "bridge", n.name)
	plant := func(cid, typ string) string {
		file := filepath.Join(netDir, records.FileName(cid, "eth0"))
		data := `{"plugin":"bridge","network":"` + n.name + `","containerID":"` + cid + `","ifName":"eth0","netns":"/nonexistent/netns",` +
			`"binary":"` + planted + `","config":{"cniVersion":"1.1.0","name":"` + n.name + `","type":"` + typ + `"}}`
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(file) })
		return file
	}
	plant("planted-binary", "bridge")
	byPath := plant("planted-type", planted)
	sandbox.Run(t, "nft", "flush", "ruleset")
	cmd := exec.Command(tool, "resync")
	out, err := cmd.CombinedOutput()
	if _, e := os.Stat(marker); e == nil {
		t.Fatalf("cnisuite resync ran a program a record named:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), byPath) {
		t.Errorf("cnisuite resync = %v\n%s\nwant a failure naming %s", err, out, byPath)
	}
	if !strings.Contains(string(out), n.name+": 4 attachments: 0 intact, 2 repaired") || !strings.Contains(string(out), "1 stale, 1 failed") {
		t.Errorf("cnisuite resync printed\n%s\nwant the pod's two attachments repaired, the planted ones stale and failed", out)
	}
	n.wantConnected(pod, "after resync")
}
