package resync

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/pkg/sysctl"
	"cnisuite/test/sandbox"
)

// TestWatchRepairs: with `cnisuite watch` running and no other action, the
// host port and the masquerade come back after each reset, STATUS is 0
// and CHECK passes again, and other software's rules are untouched. The
// time from the reset to the host port answering is logged, not asserted.
func TestWatchRepairs(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	startWatch(t, tool)
	i := 20
	for _, b := range backends {
		for _, r := range resets {
			if !r.hits(b) {
				continue
			}
			i++
			t.Run(backendName(b)+"/"+r.name, func(t *testing.T) { watchReset(t, b, r, i) })
		}
	}
}

func watchReset(t *testing.T, backend string, r reset, i int) {
	ctx := context.Background()
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, backend, i)
	cmds := r.prepare(t)
	pod := n.add("pod-w")
	n.wantConnected(pod, "after ADD")
	start := time.Now()
	for _, c := range cmds {
		// A watcher that was quicker than the admin's next command can
		// make it fail: iptables -X finds our chains back and in use.
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Logf("%s (the watcher may have repaired in between): %v: %s", strings.Join(c, " "), err, out)
		}
	}
	// Another program puts its rules back at the same time as the
	// watcher repairs ours.
	other := plantOtherSoftware(t)
	// Bounded: the watcher repairs within a second; the safety net would
	// take a minute. A reset of several commands may take rules the first
	// repair had put back: wait for the host port and the masquerade both.
	n.waitConnected(pod, r.name, start)
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after the watcher's repair: %v", err)
	}
	if err := n.rt.CheckNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Errorf("CHECK after the watcher's repair: %v", err)
	}
	other.wantUntouched(t)
	if err := n.rt.DelNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.wantNothingLeft(t, pod)
}

// startWatch runs `cnisuite watch` (with args) until the test ends, waits
// until it says it is watching, and returns that line.
func startWatch(t *testing.T, tool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tool, append([]string{"watch"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		var log []string
		for l := range lines {
			log = append(log, l)
		}
		t.Logf("cnisuite watch printed:\n%s\nstderr:\n%s", strings.Join(log, "\n"), stderr.String())
	})
	select {
	case l := <-lines:
		if !strings.Contains(l, "watching") || !strings.Contains(l, "nftables events") || !strings.Contains(l, "netconf events") {
			t.Fatalf("cnisuite watch: %q, want it watching nftables and netconf events", l)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("cnisuite watch did not start: %s", stderr.String())
	}
	return ""
}
