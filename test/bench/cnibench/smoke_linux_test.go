package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"cnisuite/test/sandbox"
)

// TestBenchSmoke runs every measurement of make bench at a tiny size on the
// chain users write (no backend keys), so that the benchmark itself cannot
// rot between the rounds that run it whole: each row must be there, with
// no errors, and each plugin's peak memory must be its own — not this
// process's, which the kernel hands a child Go starts (see meteredExec).
func TestBenchSmoke(t *testing.T) {
	o := tinyOptions(t)
	o.leases = 200
	rep, err := runAll(o)
	if err != nil {
		t.Fatalf("runAll: %v", err)
	}
	md := rep.markdown()
	for _, row := range []string{
		"| default | cnitool | 20 |", "| default | libcni | 20 |", "| default (100 NAT rules) |",
		"burst 12×4, default: ADD phase", "burst 12×4, default: ADD+CHECK phase", "burst 8×8, default: ADD phase",
		"burst 8×8, default: ADD+CHECK phase", "burst 8×8, default: CPU per pod", "busy node, default", "STATUS of the default chain", "host-local on disk",
		"peak RSS of bridge", "peak RSS of portmap", "peak RSS of tuning", "CPU per call, default, N=20",
		"CPU per call, floor (paired with default), N=20",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("the report has no row %q:\n%s", row, md)
		}
	}
	if rep.ParallelErrors["default"] != 0 || len(rep.Bursts) != 4 {
		t.Errorf("errors: parallel %v, %d bursts, want 4", rep.ParallelErrors, len(rep.Bursts))
	}
	for _, b := range rep.Bursts {
		if b.Errors != 0 || b.FloorErrors != 0 || b.AddCPU <= 0 || b.FloorDelCPU <= 0 {
			t.Errorf("burst %+v: want no errors and the CPU of its processes", *b)
		}
	}
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		t.Fatal(err)
	}
	for plugin, byVerb := range rep.PeakKB {
		for verb, kb := range byVerb {
			if kb <= 0 || kb >= self.Maxrss {
				t.Errorf("peak RSS of %s %s = %d KiB, want the plugin's own, below this process's %d KiB", plugin, verb, kb, self.Maxrss)
			}
		}
	}
	// Read from the wrong process, every plugin shows the same figure: the
	// benchmark's. tuning does far less than bridge (which runs host-local
	// too) and is a smaller program.
	if b, tu := rep.PeakKB["bridge"]["ADD"], rep.PeakKB["tuning"]["ADD"]; tu >= b {
		t.Errorf("peak RSS of tuning ADD %d KiB, of bridge ADD %d KiB: not each plugin's own", tu, b)
	}
}

// TestBenchSeqOnly: -seq-only measures the sequential pair and nothing
// else, and each call's CPU time is there, the chain's above the floor's
// (the floor only starts its processes).
func TestBenchSeqOnly(t *testing.T) {
	o := tinyOptions(t)
	o.seqOnly = true
	rep := runOnly(t, "-seq-only", o, "scenarios", 2)
	floor, ours := rep.Scenarios[0].CPU, rep.Scenarios[1].CPU
	for _, v := range verbs {
		if floor[v].N != 20 || floor[v].Median <= 0 || ours[v].Median <= floor[v].Median {
			t.Errorf("CPU per %s: ours %+v, floor's %+v; want 20 calls each, ours above the floor's", v, ours[v], floor[v])
		}
	}
}

// tinyOptions are make bench's options at a tiny size, on the default
// chain, with cnitool and the floor built into a directory of tools.
func tinyOptions(t *testing.T) *options {
	t.Helper()
	sandbox.Require(t)
	tools := t.TempDir()
	for pkg, name := range map[string]string{
		"github.com/containernetworking/cni/cnitool": "cnitool",
		"cnisuite/test/bench/floor":                  "floor",
	} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(tools, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return &options{bin: sandbox.Bin(t), tools: tools, sizes: []int{20}, backends: []string{"default"},
		parallel: 4, burstN: 12, burstK: 4, burstAll: 8, busyRules: 100, busyN: 5}
}

// runOnly runs the benchmark with o, whose flag limits it to one kind of
// row, and fails the test unless it measured n rows of that kind and none
// of any other.
func runOnly(t *testing.T, flag string, o *options, kind string, n int) *report {
	t.Helper()
	rep, err := runAll(o)
	if err != nil {
		t.Fatalf("runAll: %v", err)
	}
	rows := map[string]int{"scenarios": len(rep.Scenarios), "bursts": len(rep.Bursts), "busy rows": len(rep.Busy),
		"STATUS rows": len(rep.Status), "host-local rows": len(rep.HostLocal)}
	for k, got := range rows {
		if want := map[bool]int{true: n}[k == kind]; got != want {
			t.Fatalf("%s measured %d %s, want %d (rows: %v)", flag, got, k, want, rows)
		}
	}
	return rep
}

// TestBenchBurstsOnly: -bursts-only measures the four bursts (k at a time
// and all at once, each with ADD alone and ADD then CHECK) and nothing
// else, without errors, every phase and every DEL call timed on both sides.
func TestBenchBurstsOnly(t *testing.T) {
	o := tinyOptions(t)
	o.burstsOnly, o.burstN, o.burstK, o.burstAll = true, 6, 3, 4
	rep := runOnly(t, "-bursts-only", o, "bursts", 4)
	for _, b := range rep.Bursts {
		if b.Errors+b.FloorErrors != 0 || b.AddS <= 0 || b.DelS <= 0 || b.FloorAddS <= 0 || b.FloorDelS <= 0 ||
			b.DelCalls.N != b.N || b.FloorDelCalls.N != b.N || b.DelCalls.Median <= 0 {
			t.Errorf("burst %d×%d (check %v): %+v; want every phase timed, no errors", b.N, b.K, b.Check, b)
		}
	}
}

// TestBenchCRISmoke runs the CRI row at a tiny size: containerd 1.6's CRI
// starts and removes pods on our plugins, the reference plugins (built
// from the module proxy or cache) and the floor, on
// examples/kubernetes.conflist; every row must be there without errors,
// our network on the backend an empty node gives (nftables), and the pods'
// cgroups gone from the machine's tree afterwards.
func TestBenchCRISmoke(t *testing.T) {
	sandbox.Require(t)
	tools := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(tools, "floor"), "cnisuite/test/bench/floor").CombinedOutput(); err != nil {
		t.Fatalf("go build floor: %v\n%s", err, out)
	}
	reference := filepath.Join(tools, "reference")
	build := exec.Command("../../../scripts/reference-plugins.sh", reference)
	build.Env = append(os.Environ(), "GOPROXY=off") // the sandbox has no network: from the module cache
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the reference plugins: %v\n%s", err, out)
	}
	o := &options{bin: sandbox.Bin(t), tools: tools, reference: reference, conflist: "../../../examples/kubernetes.conflist",
		criN: 4, criK: 2, criOnly: true}
	rep, err := runAll(o)
	if err != nil {
		t.Fatalf("runAll: %v", err)
	}
	md := rep.markdown()
	for _, row := range []string{"), ours, firewall nftables: 4 pods 2 at a time", "), reference: 4 pods", "), floor: 4 pods",
		"CRI RunPodSandbox ours ÷ floor plugins", "CRI Stop+RemovePodSandbox ours ÷ floor plugins"} {
		if !strings.Contains(md, row) {
			t.Errorf("the report has no row %q:\n%s", row, md)
		}
	}
	for _, r := range rep.CRI {
		if r.Errors != 0 || r.RunP50 <= 0 || r.StopRmP50 <= 0 {
			t.Errorf("CRI row %s: %d errors (first: %s), RunPodSandbox p50 %.1f ms, Stop+Remove p50 %.1f ms", r.Plugins, r.Errors, r.FirstError, r.RunP50, r.StopRmP50)
		}
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/*/cnibench-cri-*")
	if more, _ := filepath.Glob("/sys/fs/cgroup/cnibench-cri-*"); len(left)+len(more) > 0 {
		t.Errorf("cgroups left on the machine's tree: %q %q", left, more)
	}
}
