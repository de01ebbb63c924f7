package store

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/types"
)

func a(id, ifname string) types.Attachment { return types.Attachment{ContainerID: id, IfName: ifname} }

// openLocked returns a locked store of network "net" in a temp data dir.
func openLocked(t *testing.T, dataDir string) *Store {
	t.Helper()
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(context.Background()); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	t.Cleanup(func() { _ = s.Unlock() }) // a second Unlock is a no-op
	return s
}

// writeRef writes files the way the reference plugin leaves them.
func writeRef(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// listDir returns "name=content" for every file of dir, sorted.
func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+"="+strings.ReplaceAll(string(data), "\r\n", `\r\n`))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func ipStrings(ips []net.IP) string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestOpenRejectsBadNetworkName(t *testing.T) {
	for _, name := range []string{"", "..", "../etc", "a/b", ".hidden"} {
		if _, err := Open(t.TempDir(), name); err == nil {
			t.Errorf("Open(%q) = nil error, want a refusal", name)
		}
	}
}

func TestReferenceFormatWritten(t *testing.T) {
	dataDir := t.TempDir()
	s := openLocked(t, dataDir)
	if ok, err := s.Reserve(a("c1", "eth0"), net.ParseIP("10.0.0.2"), 0); !ok || err != nil {
		t.Fatalf("Reserve() = %v, %v", ok, err)
	}
	if ok, err := s.Reserve(a("c1", "eth0"), net.ParseIP("2001:db8::2"), 1); !ok || err != nil {
		t.Fatalf("Reserve() = %v, %v", ok, err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dataDir, "net")
	want := `10.0.0.2=c1\r\neth0 2001:db8::2=c1\r\neth0 last_reserved_ip.0=10.0.0.2 last_reserved_ip.1=2001:db8::2 lock=`
	if got := listDir(t, dir); got != want {
		t.Errorf("lease dir = %s\nwant       %s", got, want)
	}
	idx := filepath.Join(dataDir, indexRootName, "net")
	for _, name := range []string{filepath.Join(dir, "10.0.0.2"), filepath.Join(dir, "2001:db8::2"),
		filepath.Join(dir, "last_reserved_ip.0"), filepath.Join(dir, "lock"),
		filepath.Join(idx, stampName), filepath.Join(idx, bucketOf(a("c1", "eth0")))} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode of %s = %v, want 0600", name, fi.Mode().Perm())
		}
	}
	if fi, err := os.Stat(idx); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("index directory: %v, %v; want mode 0700", fi, err)
	}
}

func TestReferenceFormatRead(t *testing.T) {
	dataDir := t.TempDir()
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{
		"10.0.0.2":           "c1\r\neth0",
		"10.0.0.3":           "c2", // legacy, id only
		"10.0.0.4":           "  c3\r\neth0 \n",
		"10.0.0.5":           "c1\r\nnet1",
		"last_reserved_ip.0": "10.0.0.5",
		"lock":               "",
	})
	s := openLocked(t, dataDir)
	tests := []struct {
		who  types.Attachment
		want string
	}{
		{a("c1", "eth0"), "10.0.0.2"},
		{a("c1", "net1"), "10.0.0.5"},
		{a("c2", "eth0"), "10.0.0.3"},
		{a("c3", "eth0"), "10.0.0.4"},
		{a("c4", "eth0"), ""},
	}
	for _, tt := range tests {
		got, err := s.Leases(tt.who)
		if err != nil || ipStrings(got) != tt.want {
			t.Errorf("Leases(%v) = %v, %v; want %s", tt.who, got, err, tt.want)
		}
	}
	if last, err := s.LastReserved(0); err != nil || last.String() != "10.0.0.5" {
		t.Errorf("LastReserved(0) = %v, %v; want 10.0.0.5", last, err)
	}
	if ok, err := s.Reserve(a("c9", "eth0"), net.ParseIP("10.0.0.3"), 0); ok || err != nil {
		t.Errorf("Reserve(leased by the reference) = %v, %v; want false", ok, err)
	}
}

func TestReleaseIdempotent(t *testing.T) {
	s := openLocked(t, t.TempDir())
	ip := net.ParseIP("10.0.0.2")
	if _, err := s.Reserve(a("c1", "eth0"), ip, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := s.Release(ip); err != nil {
			t.Fatalf("Release() #%d = %v", i+1, err)
		}
	}
	if got, _ := s.Leases(a("c1", "eth0")); len(got) != 0 {
		t.Errorf("Leases() after Release = %v, want none", got)
	}
}

// TestIndexFollowsForeignChanges changes the lease directory behind the
// store's back, as the reference plugin or an operator would, right after a
// change of ours, and expects the store to see it.
// TestIndexFollowsForeignChanges runs in a temporary directory (a tmpfs
// inside the sandbox) and in one on the disk the checkout is on, where
// users keep /var/lib/cni: the index's exchanges, links and stamps go
// through ext4's code there, not tmpfs's.
func TestIndexFollowsForeignChanges(t *testing.T) {
	t.Run("tmp", func(t *testing.T) { indexFollowsForeignChanges(t, t.TempDir()) })
	t.Run("disk", func(t *testing.T) { indexFollowsForeignChanges(t, diskDir(t)) })
}

// diskDir returns a fresh directory beside the test's sources, removed at
// the end; its file system is the checkout's (a disk, unless the checkout
// itself is on a tmpfs, which the log then says).
func diskDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(".", ".test-on-disk-")
	if errors.Is(err, fs.ErrPermission) { // a checkout the tests may not write
		dir, err = os.MkdirTemp("/var/tmp", ".test-on-disk-")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(abs, &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		t.Logf("%s is on a tmpfs: the checkout is", abs)
	}
	return abs
}

func indexFollowsForeignChanges(t *testing.T, dataDir string) {
	dir := filepath.Join(dataDir, "net")
	tests := []struct {
		name   string
		change func(t *testing.T)
		who    types.Attachment
		want   string
	}{
		{name: "lease_added", change: func(t *testing.T) { writeRef(t, dir, map[string]string{"10.0.0.9": "ref\r\neth0"}) },
			who: a("ref", "eth0"), want: "10.0.0.9"},
		{name: "legacy_lease_added", change: func(t *testing.T) { writeRef(t, dir, map[string]string{"10.0.0.8": "old"}) },
			who: a("old", "eth0"), want: "10.0.0.8"},
		{name: "lease_removed", change: func(t *testing.T) { _ = os.Remove(filepath.Join(dir, "10.0.0.2")) },
			who: a("c1", "eth0"), want: ""},
		{name: "index_removed", change: func(t *testing.T) { _ = os.RemoveAll(filepath.Join(dataDir, indexRootName)) },
			who: a("ref", "eth0"), want: "10.0.0.9"},
		{name: "lease_rewritten_to_other_owner", change: func(t *testing.T) {
			writeRef(t, dir, map[string]string{"10.0.0.9": "someone\r\neth0"})
		}, who: a("ref", "eth0"), want: ""},
	}
	s, err := Open(dataDir, "net")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Reserve(a("c1", "eth0"), net.ParseIP("10.0.0.2"), 0); err != nil {
				t.Fatal(err)
			}
			if err := s.Unlock(); err != nil {
				t.Fatal(err)
			}
			tt.change(t)
			if err := s.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Leases(tt.who)
			if err != nil || ipStrings(got) != tt.want {
				t.Errorf("Leases(%v) = %v, %v; want %q", tt.who, got, err, tt.want)
			}
			for _, ip := range []string{"10.0.0.2"} {
				if err := s.Release(net.ParseIP(ip)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGC(t *testing.T) {
	leases := map[string]string{
		"10.0.0.2":           "keep\r\neth0",
		"10.0.0.3":           "keep\r\nnet1", // same container, other interface: not valid
		"10.0.0.4":           "gone\r\neth0",
		"10.0.0.5":           "keep", // legacy lease of a valid container
		"10.0.0.6":           "gone", // legacy lease of a gone container
		"10.0.0.7":           "",     // a torn lease from an old crash
		"last_reserved_ip.0": "10.0.0.7",
		"lock":               "",
	}
	tests := []struct {
		name  string
		valid []types.Attachment
		want  string
	}{
		{name: "keeps_valid_and_their_legacy", valid: []types.Attachment{a("keep", "eth0")},
			want: `10.0.0.2=keep\r\neth0 10.0.0.5=keep last_reserved_ip.0=10.0.0.7 lock=`},
		{name: "empty_list_releases_all", valid: []types.Attachment{},
			want: `last_reserved_ip.0=10.0.0.7 lock=`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			writeRef(t, filepath.Join(dataDir, "net"), leases)
			writeRef(t, filepath.Join(dataDir, "other"), map[string]string{"10.0.0.4": "gone\r\neth0"})
			s := openLocked(t, dataDir)
			if _, err := s.GC(tt.valid); err != nil {
				t.Fatalf("GC() = %v", err)
			}
			if err := s.Unlock(); err != nil {
				t.Fatal(err)
			}
			if got := listDir(t, filepath.Join(dataDir, "net")); got != tt.want {
				t.Errorf("after GC: %s\nwant       %s", got, tt.want)
			}
			if got := listDir(t, filepath.Join(dataDir, "other")); got != `10.0.0.4=gone\r\neth0` {
				t.Errorf("GC touched another network: %s", got)
			}
			s2 := openLocked(t, dataDir)
			if got, _ := s2.Leases(a("gone", "eth0")); len(got) != 0 {
				t.Errorf("Leases(gone) after GC = %v, want none", got)
			}
		})
	}
}

func TestCountAndTaken(t *testing.T) {
	dataDir := t.TempDir()
	writeRef(t, filepath.Join(dataDir, "net"), map[string]string{"10.0.0.2": "x\r\neth0", "last_reserved_ip.0": "10.0.0.2", "lock": ""})
	s, _ := Open(dataDir, "net")
	if n, err := s.Count(); n != 1 || err != nil {
		t.Errorf("Count() = %d, %v; want 1", n, err)
	}
	if ok, err := s.Taken(net.ParseIP("10.0.0.2")); !ok || err != nil {
		t.Errorf("Taken(10.0.0.2) = %v, %v; want true", ok, err)
	}
	if ok, err := s.Taken(net.ParseIP("10.0.0.3")); ok || err != nil {
		t.Errorf("Taken(10.0.0.3) = %v, %v; want false", ok, err)
	}
}
