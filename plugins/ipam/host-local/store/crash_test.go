package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

const crashExit = 7

// TestCrashHelper is the child of TestCrashPoints: it runs an ADD (or an
// ADD then a DEL) and exits abruptly — no deferred call, no unlock — at
// write number CRASH_AT of the phase CRASH_PHASE.
func TestCrashHelper(t *testing.T) {
	dataDir := os.Getenv("HOSTLOCAL_CRASH_DIR")
	if dataDir == "" {
		t.Skip("helper process of TestCrashPoints")
	}
	at, _ := strconv.Atoi(os.Getenv("HOSTLOCAL_CRASH_AT"))
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	arm := func() {
		s.crash = func(string) {
			if writes++; writes == at {
				os.Exit(crashExit)
			}
		}
	}
	if phase := os.Getenv("HOSTLOCAL_CRASH_PHASE"); phase == "add" || phase == "upgrade" {
		arm()
	}
	if err := addBoth(s); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("HOSTLOCAL_CRASH_PHASE") == "del" {
		arm()
		if err := delAll(s, a("c1", "eth0")); err != nil {
			t.Fatal(err)
		}
	}
}

// addBoth is a dual-stack ADD of c1/eth0.
func addBoth(s *Store) error {
	if err := s.Lock(context.Background()); err != nil {
		return err
	}
	for set, ip := range []string{"10.0.0.2", "2001:db8::2"} {
		if ok, err := s.Reserve(a("c1", "eth0"), net.ParseIP(ip), set); !ok || err != nil {
			return errors.Join(fmt.Errorf("Reserve(%s) = %v", ip, ok), err, s.Unlock())
		}
	}
	return s.Unlock()
}

// delAll is a DEL of w.
func delAll(s *Store, w types.Attachment) error {
	if err := s.Lock(context.Background()); err != nil {
		return err
	}
	ips, err := s.Leases(w)
	for _, ip := range ips {
		err = errors.Join(err, s.Release(ip))
	}
	return errors.Join(err, s.Unlock())
}

// TestCrashPoints kills an ADD, a DEL, and the first ADD after an upgrade
// from the previous release's index, between every two writes, then checks
// that every lease on disk is complete, that the previous release would not
// trust its index unless it is whole, and that a DEL — or a GC with no valid
// attachment — leaves nothing but lock and last_reserved_ip.*.
func TestCrashPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary dozens of times")
	}
	for _, phase := range []string{"add", "del", "upgrade"} {
		for _, cleanup := range []string{"del", "gc"} {
			crashes := 0
			for at := 1; at <= 60; at++ {
				dataDir := t.TempDir()
				if phase == "upgrade" {
					seedUpgrade(t, dataDir)
				}
				code := runCrashChild(t, dataDir, phase, at)
				if code == 0 {
					break
				}
				crashes++
				name := fmt.Sprintf("%s_killed_at_write_%d_then_%s", phase, at, cleanup)
				t.Run(name, func(t *testing.T) { checkAfterCrash(t, dataDir, cleanup) })
			}
			if crashes < 5 {
				t.Errorf("phase %s: only %d crash points reached; the write hooks are not called", phase, crashes)
			}
		}
	}
}

func runCrashChild(t *testing.T, dataDir, phase string, at int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HOSTLOCAL_CRASH_DIR="+dataDir, "HOSTLOCAL_CRASH_PHASE="+phase,
		"HOSTLOCAL_CRASH_AT="+strconv.Itoa(at))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() == crashExit:
		return crashExit
	}
	t.Fatalf("crash child (%s at %d): %v\n%s", phase, at, err, out)
	return -1
}

// seedUpgrade leaves what the reference plugin leaves: a lease of c2.
func seedUpgrade(t *testing.T, dataDir string) {
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.7": "c2\r\neth0", lockName: ""})
}

func checkAfterCrash(t *testing.T, dataDir, cleanup string) {
	dir := filepath.Join(dataDir, "net")
	checkLeasesComplete(t, dir)
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	if cleanup == "del" {
		err = errors.Join(delAll(s, a("c1", "eth0")), delAll(s, a("c2", "eth0")))
	} else {
		err = s.Lock(context.Background())
		if err == nil {
			_, err = s.GC(nil)
			err = errors.Join(err, s.Unlock())
		}
	}
	if err != nil {
		t.Fatalf("%s after the crash = %v", cleanup, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != lockName && !strings.HasPrefix(e.Name(), lastReservedPrefix) {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("%s after the crash left %v", cleanup, left)
	}
}

// checkLeasesComplete fails on a lease that is not one of the complete
// leases ADD (c1) or the previous release (c2) writes.
func checkLeasesComplete(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if net.ParseIP(e.Name()) == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || (string(data) != "c1\r\neth0" && string(data) != "c2\r\neth0") {
			t.Errorf("lease %s after the crash = %q, %v; want a complete lease", e.Name(), data, err)
		}
	}
}
