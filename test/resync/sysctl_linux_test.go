package resync

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/sysctl"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/test/sandbox"
)

// keptFile is where the plugins keep the sysctls pods need (issue 23
// item 5): the sandbox's own /run.
var keptFile = filepath.Join(sysctlkeep.SysctlDir, sysctlkeep.FileName)

// TestSysctlSystem runs `sysctl --system` where the only sysctl files are
// the test's and /run/sysctl.d (ours), in a private mount namespace of the
// sandbox's network namespace: an admin's file saying ip_forward = 0 sorted
// before ours leaves forwarding on and the pod connected; one sorted after
// ours, or ours deleted, turns it off (STATUS 51), and cnisuite resync, or
// separately a running cnisuite watch, turns it on again, writes our file
// again, and the next sysctl --system keeps forwarding on. A deletion of
// our file alone (forwarding still on) is put back by resync, and by the
// watcher's safety net (shortened for the test).
func TestSysctlSystem(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	i := 60
	for _, mode := range []string{"resync", "watch"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "watch" {
				t.Setenv("CNISUITE_WATCH_SAFETY_INTERVAL", "2s")
				startWatch(t, tool)
			}
			for _, b := range backends {
				i++
				t.Run(backendName(b), func(t *testing.T) { sysctlReset(t, tool, b, i, mode == "watch") })
			}
		})
	}
}

func sysctlReset(t *testing.T, tool, backend string, i int, watching bool) {
	ctx := context.Background()
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	// What other attachments on the sandbox's node hold already (packages
	// that ran before in the same sandbox may have left holds): after the
	// DEL of this test's pod, the file must list that and nothing more.
	base := heldBefore(t)
	n := newNode(t, backend, i)
	pod := n.add("pod-s")
	n.wantConnected(pod, "after ADD")
	want := readKept(t)
	if !strings.Contains(want, "net/ipv4/ip_forward = 1") {
		t.Fatalf("%s after ADD:\n%s\nwant ip_forward held", keptFile, want)
	}
	before := map[string]string{"99-admin.conf": "net.ipv4.ip_forward = 0\n"}
	if got := sysctlSystem(t, before); got != "1" {
		t.Errorf("ip_forward after sysctl --system with an admin's 99-admin.conf saying 0 = %s, want our file's 1", got)
	}
	n.wantConnected(pod, "after sysctl --system with 99-admin.conf")
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after sysctl --system kept forwarding on: %v", err)
	}
	after := map[string]string{"zzz-admin.conf": "net.ipv4.ip_forward = 0\n"}
	n.forwardingReset(t, tool, pod, "a file sorted after ours", after, watching)
	if err := os.Remove(keptFile); err != nil {
		t.Fatal(err)
	}
	n.forwardingReset(t, tool, pod, "our file deleted", before, watching)
	waitKept(t, want, watching)
	if got := sysctlSystem(t, before); got != "1" {
		t.Errorf("ip_forward after sysctl --system with our file written again = %s, want 1", got)
	}
	// Deleted while forwarding stays on: no event, nothing lost yet.
	if err := os.Remove(keptFile); err != nil {
		t.Fatal(err)
	}
	if !watching {
		if out := sandbox.Run(t, tool, "resync", "-n"); !strings.Contains(out, keptFile+": to write again") || fileExists(keptFile) {
			t.Errorf("resync -n without our file: %q", out)
		}
		if out := sandbox.Run(t, tool, "resync"); !strings.Contains(out, keptFile+": written again") {
			t.Errorf("resync without our file: %q", out)
		}
	}
	waitKept(t, want, watching)
	if err := n.rt.CheckNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Errorf("CHECK after the repairs: %v", err)
	}
	if err := n.rt.DelNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.wantNothingLeft(t, pod)
	switch got, has := heldLines(t); {
	case base == "" && has:
		t.Errorf("%s left after the last pod's DEL:\n%s", keptFile, readKept(t))
	case base != "" && got != base:
		t.Errorf("%s after the pod's DEL lists\n%s\nwant what others held before the pod:\n%s", keptFile, got, base)
	}
}

// heldBefore renders the keys held in the holds directory, as our file
// lists them: "" when nothing is held.
func heldBefore(t *testing.T) string {
	t.Helper()
	keys, err := os.ReadDir(sysctlkeep.HoldsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, k := range keys {
		if k.IsDir() {
			key, value, _ := strings.Cut(strings.ReplaceAll(k.Name(), "%", "/"), "=")
			held = append(held, key+" = "+value)
		}
	}
	sort.Strings(held)
	return strings.Join(held, "\n")
}

// heldLines returns the settings our file lists (comments left out), and
// whether it exists.
func heldLines(t *testing.T) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(keptFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			held = append(held, line)
		}
	}
	return strings.Join(held, "\n"), true
}

// forwardingReset runs sysctl --system with files, which must turn
// forwarding off, and checks the repair: by cnisuite resync (STATUS 51
// before, the pod's egress cut), or by the watcher.
func (n *node) forwardingReset(t *testing.T, tool string, pod *pod, what string, files map[string]string, watching bool) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	got := sysctlSystem(t, files)
	if watching {
		n.waitConnected(pod, "sysctl --system with "+what, start)
		return
	}
	if got != "0" {
		t.Fatalf("ip_forward after sysctl --system with %s = %s: the reset did not take", what, got)
	}
	if src, err := ask(pod.ns, n.peer.peerIP, 9000); err == nil {
		t.Errorf("with forwarding off (%s) the pod still reached out, seen as %s", what, src)
	}
	var e *cnitypes.Error
	if err := n.status(ctx); !errors.As(err, &e) || e.Code != 51 || !strings.Contains(e.Msg, n.name) {
		t.Errorf("STATUS with forwarding off (%s) = %v, want code 51 naming %s", what, err, n.name)
	}
	out := sandbox.Run(t, tool, "resync")
	t.Logf("cnisuite resync after %s:\n%s", what, out)
	if !strings.Contains(out, "net.ipv4.ip_forward") {
		t.Errorf("resync after %s: %q, want ip_forward repaired", what, out)
	}
	n.wantConnected(pod, "after resync ("+what+")")
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after resync (%s): %v", what, err)
	}
}

// waitKept waits (bounded, for a watcher's repair or its safety net) until
// our file holds want again.
func waitKept(t *testing.T, want string, watching bool) {
	t.Helper()
	wait := time.Duration(0)
	if watching {
		wait = 10 * time.Second
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(keptFile)
		if string(data) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want it written again:\n%s", keptFile, data, want)
		}
	}
}

func readKept(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(keptFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sysctlSystem runs `sysctl --system` in a private mount namespace where
// every directory it reads but /run/sysctl.d (the sandbox's tmpfs: ours)
// is an empty tmpfs, /etc/sysctl.conf is empty, and /etc/sysctl.d holds
// files (name → text), and returns ip_forward afterwards. It checks that
// nothing else is there before running: the machine's own files set
// global kernel keys. The network namespace is the sandbox's.
func sysctlSystem(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	script := `set -e
for d in /etc/sysctl.d /usr/lib/sysctl.d /usr/local/lib/sysctl.d /lib/sysctl.d; do
	if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi
done
if [ -e /etc/sysctl.conf ]; then mount --bind /dev/null /etc/sysctl.conf; fi
cp "$1"/* /etc/sysctl.d/
for d in /usr/lib/sysctl.d /usr/local/lib/sysctl.d /lib/sysctl.d; do
	if [ -d "$d" ] && [ -n "$(ls -A "$d")" ]; then echo "refusing: $d is not empty" >&2; exit 1; fi
done
for f in /etc/sysctl.d/* /run/sysctl.d/*; do
	case $f in "/run/sysctl.d/*"|/run/sysctl.d/zz-cnisuite.conf) ;; /etc/sysctl.d/*) [ -e "$1/${f#/etc/sysctl.d/}" ] || { echo "refusing: $f is not the test's" >&2; exit 1; } ;; *) echo "refusing: $f is not ours" >&2; exit 1 ;; esac
done
if [ -s /etc/sysctl.conf ]; then echo "refusing: /etc/sysctl.conf is not empty" >&2; exit 1; fi
sysctl --system >&2
cat /proc/sys/net/ipv4/ip_forward`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sysctl --system in a private mount namespace: %v\n%s", err, stderr.String())
	}
	applied := stderr.String()
	for _, name := range names {
		if !strings.Contains(applied, "/etc/sysctl.d/"+name) {
			t.Errorf("sysctl --system did not read the test's %s:\n%s", name, applied)
		}
	}
	return strings.TrimSpace(string(out))
}
