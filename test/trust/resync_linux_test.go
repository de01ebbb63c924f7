package trust

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// TestResyncAndWatchLeaveNothing: cnisuite resync and cnisuite watch (which
// the operator starts, and which start repairs) listen on nothing, leave
// no process behind once they end, and lend nothing to an unprivileged
// root process, whether or not a repair ran.
func TestResyncAndWatchLeaveNothing(t *testing.T) {
	sandbox.Require(t)
	bin := sandbox.Bin(t)
	base := listeners(t)
	victim := victimLink(t)
	n := newNode(t, chains[0])
	p := n.newPod("trust-resync", 8193)
	ctx := context.Background()
	if _, err := n.rt.AddNetworkList(ctx, n.list, p.rc); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	tool := filepath.Join(bin, "cnisuite")
	for _, what := range []string{"resync with nothing to repair", "resync after nft flush ruleset"} {
		if strings.Contains(what, "flush") {
			sandbox.Run(t, "nft", "flush", "ruleset")
		}
		sandbox.Run(t, tool, "resync")
		wantNothingOfOurs(t, bin, what, base)
		wantDeputyRefused(t, what, victim, p.ns.Path())
	}
	watch := startWatch(t, tool)
	wantNothingOfOurs(t, bin, "cnisuite watch started", base, watch.Process.Pid)
	sandbox.Run(t, "nft", "flush", "ruleset")
	waitRepaired(t)
	if l := added(base, listeners(t)); len(l) > 0 {
		t.Errorf("cnisuite watch, after a repair: new listening sockets %q", l)
	}
	wantDeputyRefused(t, "a repair of cnisuite watch", victim, p.ns.Path())
	if err := watch.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = watch.Wait() // ended by our signal
	wantNothingOfOurs(t, bin, "cnisuite watch ended", base)
}

// startWatch runs cnisuite watch until it says it is watching; the test's
// cleanup ends it if the test did not.
func startWatch(t *testing.T, tool string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(tool, "watch")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() // ours, by PID
			_ = cmd.Wait()
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-first:
		if !strings.Contains(l, "watching") {
			t.Fatalf("cnisuite watch: %q, want it watching", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cnisuite watch did not start within 30 s")
	}
	return cmd
}

// waitRepaired waits (bounded) until the watcher has put our tables back.
func waitRepaired(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(sandbox.Run(t, "nft", "list", "tables"), "cnisuite") {
			time.Sleep(500 * time.Millisecond) // the repair's process ends after its commit
			return
		}
	}
	t.Fatal("cnisuite watch did not repair within 20 s of nft flush ruleset")
}
