package store

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// inBoot opens the store of network "net" as it would be opened in the
// boot with the given ID, locked.
func inBoot(t *testing.T, dataDir, boot string) *Store {
	t.Helper()
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	s.boot = boot
	if err := s.Lock(context.Background()); err != nil {
		t.Fatalf("Lock() in boot %s = %v", boot, err)
	}
	return s
}

// reserveIn leases ip to a in the given boot and unlocks.
func reserveIn(t *testing.T, dataDir, boot, ip string, who string) {
	t.Helper()
	s := inBoot(t, dataDir, boot)
	if ok, err := s.Reserve(a(who, "eth0"), net.ParseIP(ip), 0); !ok || err != nil {
		t.Fatalf("Reserve(%s) in boot %s = %v, %v", ip, boot, ok, err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// leasesIn lists the lease files of the network.
func leasesIn(t *testing.T, dataDir string) []string {
	t.Helper()
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	names, err := s.leaseNames()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestFirstCallRecordsBootAndReleasesNothing(t *testing.T) {
	dataDir := t.TempDir()
	netDir := filepath.Join(dataDir, "net")
	writeRef(t, netDir, map[string]string{"10.0.0.2": "ref-ctr\r\neth0"}) // an upgrade: leases, no record
	s := inBoot(t, dataDir, "boot-1")
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := leasesIn(t, dataDir); len(got) != 1 {
		t.Errorf("the first call without a boot record released %v", got)
	}
	if rec, err := os.ReadFile(filepath.Join(dataDir, bootRootName, "net")); err != nil || string(rec) != "boot-1" {
		t.Errorf("boot record = %q, %v; want boot-1", rec, err)
	}
}

func TestRebootReleasesEveryLeaseOfEarlierBoots(t *testing.T) {
	dataDir := t.TempDir()
	reserveIn(t, dataDir, "boot-1", "10.0.0.2", "c1")
	reserveIn(t, dataDir, "boot-1", "10.0.0.3", "c2")
	s := inBoot(t, dataDir, "boot-2")
	if got := leasesIn(t, dataDir); len(got) != 0 {
		t.Errorf("after a reboot, leases of the earlier boot remain: %v", got)
	}
	// The index agrees: c1 can lease again, and its address is free.
	if ok, err := s.Reserve(a("c1", "eth0"), net.ParseIP("10.0.0.3"), 0); !ok || err != nil {
		t.Errorf("Reserve after the reboot = %v, %v", ok, err)
	}
	if ips, err := s.Leases(a("c1", "eth0")); err != nil || len(ips) != 1 || !ips[0].Equal(net.ParseIP("10.0.0.3")) {
		t.Errorf("Leases(c1) after the reboot = %v, %v; want only 10.0.0.3", ips, err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	last, _ := os.ReadFile(filepath.Join(dataDir, "net", lastReservedPrefix+"0"))
	if string(last) != "10.0.0.3" {
		t.Errorf("last_reserved_ip.0 = %q: round-robin state is kept across boots", last)
	}
}

// Leases the reference plugin wrote after our last call — maybe in this
// very boot, after a rollback and an upgrade — are kept; ours of the
// earlier boot go.
func TestRebootKeepsLeasesWrittenBehindOurBack(t *testing.T) {
	dataDir := t.TempDir()
	reserveIn(t, dataDir, "boot-1", "10.0.0.2", "ours")
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.9": "reference-ctr\r\neth0"})
	s := inBoot(t, dataDir, "boot-2")
	defer s.Unlock()
	got := leasesIn(t, dataDir)
	if len(got) != 1 || got[0] != "10.0.0.9" {
		t.Errorf("after the reboot the leases are %v, want only the reference's 10.0.0.9", got)
	}
}

// A wall clock that jumps (a machine without a battery-backed clock boots
// at 1970, then syncs) changes nothing: within one boot no lease goes,
// whatever its timestamps say.
func TestClockJumpWithinOneBootReleasesNothing(t *testing.T) {
	dataDir := t.TempDir()
	reserveIn(t, dataDir, "boot-1", "10.0.0.2", "c1")
	lease := filepath.Join(dataDir, "net", "10.0.0.2")
	epoch := time.Unix(42, 0)
	for _, p := range []string{lease, filepath.Join(dataDir, "net")} {
		if err := os.Chtimes(p, epoch, epoch); err != nil {
			t.Fatal(err)
		}
	}
	s := inBoot(t, dataDir, "boot-1")
	defer s.Unlock()
	if got := leasesIn(t, dataDir); len(got) != 1 {
		t.Errorf("a lease with a 1970 timestamp was released within its own boot: %v", got)
	}
}

// Calls racing on the first call after a boot: the lock orders them, the
// first releases, the others find the boot recorded.
func TestRebootRace(t *testing.T) {
	dataDir := t.TempDir()
	for i, ip := range []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		reserveIn(t, dataDir, "boot-1", ip, "c"+string(rune('a'+i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(dataDir, "net")
			if err != nil {
				errs <- err
				return
			}
			s.boot = "boot-2"
			if err := s.Lock(context.Background()); err != nil {
				errs <- err
				return
			}
			errs <- s.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a racing first call failed: %v", err)
		}
	}
	if got := leasesIn(t, dataDir); len(got) != 0 {
		t.Errorf("leases of the earlier boot remain after the race: %v", got)
	}
}
