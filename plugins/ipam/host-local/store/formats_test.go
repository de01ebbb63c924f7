package store

import (
	"context"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"cnisuite/test/golden"
)

// TestFormatLeases pins what host-local keeps under its dataDir
// (docs/formats.md, "host-local"): the reference plugin's lease files,
// last_reserved_ip.<n> and lock, byte for byte, and our index and boot
// record beside them, after two attachments took leases. The stamp (a time) and the boot ID (the kernel's)
// are the only parts normalized, after checking their shape.
func TestFormatLeases(t *testing.T) {
	dataDir := t.TempDir()
	s, err := Open(dataDir, "net1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(context.Background()); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	for i, ip := range []string{"10.88.0.2", "fd00:88::2"} {
		if ok, err := s.Reserve(a("c0ffee01", "eth0"), net.ParseIP(ip), i); !ok || err != nil {
			t.Fatalf("Reserve(%s) = %v, %v", ip, ok, err)
		}
	}
	// A second lease in range set 0 replaces last_reserved_ip.0 through
	// its spare.
	if ok, err := s.Reserve(a("c0ffee02", "net1"), net.ParseIP("10.88.0.3"), 0); !ok || err != nil {
		t.Fatalf("Reserve(10.88.0.3) = %v, %v", ok, err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	tree := golden.Tree(t, dataDir)
	boot, err := os.ReadFile(bootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(boot))
	if !strings.Contains(tree, "\t| "+id+"\n") {
		t.Fatalf("no boot record holding the boot ID %s:\n%s", id, tree)
	}
	tree = strings.Replace(tree, id, "<boot ID>", 1)
	stamp := regexp.MustCompile(`(\.stamp\n\t\| )\d{20}\n`)
	if !stamp.MatchString(tree) {
		t.Fatalf("no stamp of 20 digits:\n%s", tree)
	}
	tree = stamp.ReplaceAllString(tree, "${1}<20 digits: nanoseconds since 1970 of the network directory's time>\n")
	golden.Check(t, "format_leases", tree)
}
