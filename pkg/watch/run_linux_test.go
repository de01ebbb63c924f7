package watch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cnisuite/test/userns"
)

// The tests that watch the kernel run as root of a user namespace of their
// own (test/userns), as root or not: the tables they delete and the
// forwarding they turn off are their own network namespace's.
func TestMain(m *testing.M) { userns.Main(m) }

// watching runs Run in the test's namespace until the test ends and
// returns the repairs' reasons as they come, once every source listens.
func watching(t *testing.T, o Options) (reasons <-chan string, listening []string, log *syncBuffer) {
	t.Helper()
	userns.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 16)
	ready := make(chan []string, 1)
	log = &syncBuffer{}
	o.Repair = func(_ context.Context, reason string) {
		select {
		case ch <- reason:
		default:
		}
	}
	o.Ready = func(s []string) { ready <- s }
	o.Log = log
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := waitFor(t, done); err != nil {
			t.Errorf("Run after its context ended = %v, want nil", err)
		}
	})
	listening = waitFor(t, ready)
	if r := waitFor(t, ch); r != "start" {
		t.Fatalf("first repair: %q, want start", r)
	}
	return ch, listening, log
}

// waitFor returns the next value of c, failing the test after 10 s (a
// bound on a hung watcher, not a measure).
func waitFor[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came in 10 s")
	}
	var zero T
	return zero
}

// syncBuffer is a bytes.Buffer the watcher's sources may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nft runs the nft binary in the test's namespace.
func nft(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("nft", args...).CombinedOutput(); err != nil {
		t.Fatalf("nft %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeSysctl writes a /proc/sys/net file of the test's namespace.
func writeSysctl(t *testing.T, key, value string) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRepairOnEvents: the watcher listens to nftables and netconf events
// (firewalld, without a system bus, is said in the log), repairs at start,
// and repairs again, saying why, when a table of ours is deleted or a
// family's forwarding goes off — not for the deletion of another table or
// for forwarding going on.
func TestRepairOnEvents(t *testing.T) {
	writeSysctl(t, "net/ipv4/ip_forward", "1")
	writeSysctl(t, "net/ipv6/conf/all/forwarding", "1")
	nft(t, "add", "table", "inet", "cnisuite_watchtest")
	nft(t, "add", "table", "inet", "someone_else")
	reasons, listening, log := watching(t, Options{SafetyInterval: time.Hour, Settle: time.Millisecond})
	if want := []string{"netconf events", "nftables events"}; !slices.Equal(listening, want) {
		t.Errorf("listening to %q, want %q", listening, want)
	}
	if !strings.Contains(log.String(), "watch: firewalld: no system bus") {
		t.Errorf("log = %q, want firewalld's absence said", log.String())
	}
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"nft delete table of someone else, then ours", func() {
			nft(t, "delete", "table", "inet", "someone_else")
			nft(t, "delete", "table", "inet", "cnisuite_watchtest")
		}, "nftables table deleted in cnisuite_watchtest "},
		{"forwarding on again, then IPv4 off", func() {
			writeSysctl(t, "net/ipv6/conf/all/forwarding", "1")
			writeSysctl(t, "net/ipv4/ip_forward", "0")
		}, "IPv4 forwarding turned off"},
		{"IPv6 forwarding off", func() { writeSysctl(t, "net/ipv6/conf/all/forwarding", "0") }, "IPv6 forwarding turned off"},
	}
	for _, s := range steps {
		s.do()
		if got := waitFor(t, reasons); got != s.want {
			t.Errorf("%s: repair for %q, want %q", s.name, got, s.want)
		}
	}
}

// TestSafetyNet: without events the repair runs at the safety interval.
func TestSafetyNet(t *testing.T) {
	reasons, _, _ := watching(t, Options{SafetyInterval: 5 * time.Millisecond})
	if got := waitFor(t, reasons); got != "safety net" {
		t.Errorf("repair without events for %q, want safety net", got)
	}
}
