package store

import (
	"cnisuite/pkg/statedir"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cnisuite/pkg/types"
)

// writeV1Index writes an index of the previous release for network "net":
// one file per attachment, and, when stamped, a stamp matching the network
// directory as that release's commit leaves it.
func writeV1Index(t *testing.T, dataDir string, listed map[types.Attachment][]string, stamped bool) string {
	t.Helper()
	dir := filepath.Join(dataDir, v1IndexRootName, "net")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for who, ips := range listed {
		content := who.ContainerID + "\n" + who.IfName + "\n"
		for _, ip := range ips {
			content += ip + "\n"
		}
		writeRef(t, dir, map[string]string{indexKey(who): content})
	}
	if stamped {
		at := time.Now().Add(-stampLag)
		if err := os.Chtimes(filepath.Join(dataDir, "net"), at, at); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dataDir, "net"))
		if err != nil {
			t.Fatal(err)
		}
		writeRef(t, dir, map[string]string{stampName: stampText(fi.ModTime())})
	}
	return dir
}

// An index of the previous release is never trusted, even stamped: here it
// is stamped but wrong (it misses c1's lease and lists one that does not
// exist). The first call rebuilds ours from the lease files and removes it,
// so that a rollback finds no stamp and rebuilds too.
func TestUpgradeFromV1IndexRebuilds(t *testing.T) {
	dataDir := t.TempDir()
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.2": "c1\r\neth0", "10.0.0.3": "c2\r\neth0", lockName: ""})
	v1 := writeV1Index(t, dataDir, map[types.Attachment][]string{a("c2", "eth0"): {"10.0.0.3", "10.0.0.9"}}, true)
	if ok, err := stampMatches(openDir(t, filepath.Join(dataDir, "net")), openDir(t, v1)); !ok || err != nil {
		t.Fatalf("the previous release's stamp does not match (%v, %v): the test proves nothing", ok, err)
	}
	s := openLocked(t, dataDir)
	if got, err := s.Leases(a("c1", "eth0")); err != nil || ipStrings(got) != "10.0.0.2" {
		t.Errorf("Leases(c1) = %v, %v; want 10.0.0.2 from the lease files", got, err)
	}
	if got, err := s.Leases(a("c2", "eth0")); err != nil || ipStrings(got) != "10.0.0.3" {
		t.Errorf("Leases(c2) = %v, %v; want 10.0.0.3", got, err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{v1, filepath.Dir(v1)} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the upgrade: %v; want it removed", gone, err)
		}
	}
}

// The previous release's stamp goes before any of its files, so a crash in
// the middle of the removal leaves it an index it rebuilds.
func TestV1IndexStampRemovedFirst(t *testing.T) {
	dataDir := t.TempDir()
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.2": "c1\r\neth0", lockName: ""})
	v1 := writeV1Index(t, dataDir, map[types.Attachment][]string{a("c1", "eth0"): {"10.0.0.2"}}, true)
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	checked := false
	s.crash = func(point string) {
		if point != "v1-stamp-removed" {
			return
		}
		checked = true
		_, stampErr := os.Lstat(filepath.Join(v1, stampName))
		_, fileErr := os.Lstat(filepath.Join(v1, indexKey(a("c1", "eth0"))))
		if !errors.Is(stampErr, fs.ErrNotExist) || fileErr != nil {
			t.Errorf("at v1-stamp-removed: stamp %v, index file %v; want the stamp gone first", stampErr, fileErr)
		}
	}
	if err := s.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Error("the removal of the previous index never reached v1-stamp-removed")
	}
}

// Another network's index of the previous release stays until that
// network's first call.
func TestV1IndexOfOtherNetworkKept(t *testing.T) {
	dataDir := t.TempDir()
	other := filepath.Join(dataDir, v1IndexRootName, "other")
	writeRef(t, other, map[string]string{stampName: invalidStamp})
	writeRef(t, filepath.Join(dataDir, "net"), nil)
	writeV1Index(t, dataDir, nil, true)
	s := openLocked(t, dataDir)
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, stampName)); err != nil {
		t.Errorf("the index of another network: %v; want it kept", err)
	}
}

// An upgrade across a reboot: the boot release reads the previous
// release's index, which our own index does not exist yet to replace.
func TestRebootAfterUpgradeFromV1(t *testing.T) {
	tests := []struct {
		name    string
		stamped bool
		want    string // leases left
	}{
		// Nothing changed the directory since that release's last call:
		// every lease predates the boot.
		{name: "v1_stamped", stamped: true, want: ""},
		// The reference wrote 10.0.0.9 since, maybe in this boot: only
		// what that release listed goes.
		{name: "v1_unstamped", stamped: false, want: "10.0.0.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.2": "c1\r\neth0", "10.0.0.9": "ref\r\neth0", lockName: ""})
			writeV1Index(t, dataDir, map[types.Attachment][]string{a("c1", "eth0"): {"10.0.0.2"}}, tt.stamped)
			writeRef(t, filepath.Join(dataDir, bootRootName), map[string]string{"net": "boot-1"})
			s := inBoot(t, dataDir, "boot-2")
			if err := s.Unlock(); err != nil {
				t.Fatal(err)
			}
			if got := ipStrings(parseIPs(leasesIn(t, dataDir))); got != tt.want {
				t.Errorf("leases after the reboot = %q, want %q", got, tt.want)
			}
		})
	}
}

func parseIPs(names []string) []net.IP {
	var out []net.IP
	for _, n := range names {
		out = append(out, net.ParseIP(n))
	}
	return out
}

// indexKey names a file of the previous release's index: the first 16
// bytes of the attachment's hash, in hex.
func indexKey(a types.Attachment) string {
	sum := attachmentHash(a)
	return hex.EncodeToString(sum[:16])
}

// openDir opens a directory of the test's for the store's helpers.
func openDir(t *testing.T, path string) *statedir.Dir {
	t.Helper()
	d, err := statedir.OpenRoot(path, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
