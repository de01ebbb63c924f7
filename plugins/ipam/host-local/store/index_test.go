package store

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// indexFiles returns the name and content of every file of the index.
func indexFiles(t *testing.T, dataDir string) map[string]string {
	t.Helper()
	dir := filepath.Join(dataDir, indexRootName, "net")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// A released attachment leaves no trace in the index: its lines go, an
// emptied bucket goes, and the spare keeps no old copy of its bucket.
func TestIndexLeavesNoTraceOfReleased(t *testing.T) {
	dataDir := t.TempDir()
	s := openLocked(t, dataDir)
	gone, kept := a("container-gone", "eth0"), a("container-kept", "eth0")
	for i, ip := range []string{"10.0.0.2", "2001:db8::2"} {
		if ok, err := s.Reserve(gone, net.ParseIP(ip), i); !ok || err != nil {
			t.Fatalf("Reserve(%s) = %v, %v", ip, ok, err)
		}
	}
	if ok, err := s.Reserve(kept, net.ParseIP("10.0.0.3"), 0); !ok || err != nil {
		t.Fatalf("Reserve(kept) = %v, %v", ok, err)
	}
	if got, err := s.Leases(gone); err != nil || ipStrings(got) != "10.0.0.2 2001:db8::2" {
		t.Errorf("Leases(gone) = %v, %v; want both addresses", got, err)
	}
	for _, ip := range []string{"10.0.0.2", "2001:db8::2"} {
		if err := s.Release(net.ParseIP(ip)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	files := indexFiles(t, dataDir)
	for name, content := range files {
		if strings.Contains(content, gone.ContainerID) {
			t.Errorf("index file %s still names the released container: %q", name, content)
		}
	}
	if want := bucketOf(kept); len(files) > 3 || !strings.Contains(files[want], kept.ContainerID) {
		t.Errorf("index files = %v, want the stamp, the spare and bucket %s listing %s", files, want, kept.ContainerID)
	}
}

// The rebuild writes one file per bucket in use, never one per attachment.
func TestRebuildWritesBuckets(t *testing.T) {
	dataDir := t.TempDir()
	leases := map[string]string{}
	for i := 0; i < 2000; i++ {
		leases[net.IPv4(10, 1, byte(i/250), byte(1+i%250)).String()] = "ctr-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + net.IPv4(0, 0, byte(i/250), byte(i%250)).String() + "\r\neth0"
	}
	writeRef(t, filepath.Join(dataDir, "net"), leases)
	s := openLocked(t, dataDir)
	files := indexFiles(t, dataDir)
	if len(files) > 1<<bucketBits+1 {
		t.Errorf("the rebuild wrote %d files for 2000 leases, want at most %d buckets and the stamp", len(files), 1<<bucketBits)
	}
	lines := 0
	for name, content := range files {
		if name != stampName {
			lines += bytes.Count([]byte(content), []byte("\n"))
		}
	}
	if lines != len(leases) {
		t.Errorf("the buckets list %d leases, want %d", lines, len(leases))
	}
	for ip, content := range leases {
		id, ifname, _ := strings.Cut(content, "\r\n")
		if got, err := s.Leases(a(id, ifname)); err != nil || ipStrings(got) != ip {
			t.Fatalf("Leases(%s) = %v, %v; want %s", id, got, err, ip)
		}
	}
}
