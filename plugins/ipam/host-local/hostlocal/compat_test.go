package hostlocal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceCompatibility starts from a lease directory the reference
// plugin left, works on it, lets the "reference" change it again behind our
// back (a rollback), and checks that every step honours the other's leases.
func TestReferenceCompatibility(t *testing.T) {
	dataDir := t.TempDir()
	seed(t, dataDir, map[string]string{
		"10.1.2.2":           "ref1\r\neth0",
		"10.1.2.3":           "legacy1", // written by a reference older than v0.8: container ID only
		"10.1.2.5":           "ref2\r\neth0",
		"10.1.2.6":           "ref3\r\neth0",
		"last_reserved_ip.0": "10.1.2.5",
		"lock":               "",
	})
	c := conf("1.0.0", dataDir, `"ranges":[[{"subnet":"10.1.2.0/24"}]]`)
	steps := []struct {
		name string
		c    call
		want string // address of an ADD, or the start of an error message
	}{
		{"allocation_skips_reference_leases", call{cmd: "ADD", id: "new1", conf: c}, "10.1.2.7/24"},
		{"duplicate_of_reference_lease", call{cmd: "ADD", id: "ref1", conf: c}, "error: already holds 10.1.2.2"},
		{"duplicate_of_legacy_lease", call{cmd: "ADD", id: "legacy1", conf: c}, "error: already holds 10.1.2.3"},
		{"check_reference_lease", call{cmd: "CHECK", id: "ref1", conf: c}, ""},
		{"check_legacy_lease", call{cmd: "CHECK", id: "legacy1", conf: c}, ""},
		{"del_legacy_lease", call{cmd: "DEL", id: "legacy1", conf: c}, ""},
		{"del_reference_lease", call{cmd: "DEL", id: "ref3", conf: c}, ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { checkStep(t, s.c, s.want) })
	}
	want := `10.1.2.2=ref1\r\neth0 10.1.2.5=ref2\r\neth0 10.1.2.7=new1\r\neth0 last_reserved_ip.0=10.1.2.7 lock=`
	if got := files(t, dataDir); got != want {
		t.Errorf("lease directory =\n%s\nwant\n%s", got, want)
	}

	// Rollback: the reference adds a lease and releases one of ours, then we run again.
	dir := filepath.Join(dataDir, "testnet")
	if err := os.WriteFile(filepath.Join(dir, "10.1.2.8"), []byte("ref4\r\neth0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "last_reserved_ip.0"), []byte("10.1.2.8"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "10.1.2.7")); err != nil {
		t.Fatal(err)
	}
	checkStep(t, call{cmd: "ADD", id: "ref4", conf: c}, "error: already holds 10.1.2.8")
	checkStep(t, call{cmd: "ADD", id: "new1", conf: c}, "10.1.2.9/24")

	gc := conf("1.1.0", dataDir, `"ranges":[[{"subnet":"10.1.2.0/24"}]]`,
		`"cni.dev/valid-attachments":[{"containerID":"ref2","ifname":"eth0"},{"containerID":"new1","ifname":"eth0"}]`)
	checkStep(t, call{cmd: "GC", conf: gc}, "")
	want = `10.1.2.5=ref2\r\neth0 10.1.2.9=new1\r\neth0 last_reserved_ip.0=10.1.2.9 lock=`
	if got := files(t, dataDir); got != want {
		t.Errorf("after GC =\n%s\nwant\n%s", got, want)
	}
}

func checkStep(t *testing.T, c call, want string) {
	t.Helper()
	out, code := run(t, c)
	if wantErr, isErr := strings.CutPrefix(want, "error: "); isErr {
		if _, msg := errorOf(t, out); code == 0 || !strings.Contains(msg, wantErr) {
			t.Errorf("%s %s = %s, want error %q", c.cmd, c.id, out, wantErr)
		}
		return
	}
	if code != 0 {
		t.Fatalf("%s %s = %s", c.cmd, c.id, out)
	}
	if want != "" {
		if got := ipsOf(t, out); len(got) != 1 || got[0] != want {
			t.Errorf("%s %s = %v, want %s", c.cmd, c.id, got, want)
		}
	}
}

func TestGC(t *testing.T) {
	seeded := map[string]string{
		"10.1.2.2":           "keep\r\neth0",
		"10.1.2.3":           "keep\r\nnet1",
		"10.1.2.4":           "gone\r\neth0",
		"10.1.2.5":           "keep", // legacy lease of a valid container
		"10.1.2.6":           "gone", // legacy lease of a gone container
		"last_reserved_ip.0": "10.1.2.6",
		"lock":               "",
	}
	tests := []struct {
		name string
		keys []string
		want string
		err  string
	}{
		{name: "valid_attachments", keys: []string{`"cni.dev/valid-attachments":[{"containerID":"keep","ifname":"eth0"}]`},
			want: `10.1.2.2=keep\r\neth0 10.1.2.5=keep last_reserved_ip.0=10.1.2.6 lock=`},
		{name: "legacy_key", keys: []string{`"cni.dev/attachments":[{"containerID":"keep","ifname":"net1"}]`},
			want: `10.1.2.3=keep\r\nnet1 10.1.2.5=keep last_reserved_ip.0=10.1.2.6 lock=`},
		{name: "both_keys_union", keys: []string{`"cni.dev/valid-attachments":[{"containerID":"keep","ifname":"eth0"}]`,
			`"cni.dev/attachments":[{"containerID":"keep","ifname":"net1"}]`},
			want: `10.1.2.2=keep\r\neth0 10.1.2.3=keep\r\nnet1 10.1.2.5=keep last_reserved_ip.0=10.1.2.6 lock=`},
		{name: "empty_list_releases_all", keys: []string{`"cni.dev/valid-attachments":[]`}, want: `last_reserved_ip.0=10.1.2.6 lock=`},
		{name: "null_list_releases_all", keys: []string{`"cni.dev/valid-attachments":null`, `"cni.dev/attachments":null`},
			want: `last_reserved_ip.0=10.1.2.6 lock=`},
		{name: "missing_key_releases_all", want: `last_reserved_ip.0=10.1.2.6 lock=`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			seed(t, dataDir, seeded)
			other := filepath.Join(dataDir, "othernet")
			if err := os.MkdirAll(other, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(other, "10.1.2.4"), []byte("gone\r\neth0"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := run(t, call{cmd: "GC", conf: conf("1.1.0", dataDir, dualStack, tt.keys...)})
			if tt.err != "" {
				if _, msg := errorOf(t, out); code == 0 || !strings.Contains(msg, tt.err) {
					t.Errorf("GC = %s, want error %q", out, tt.err)
				}
				return
			}
			if code != 0 {
				t.Fatalf("GC = %s", out)
			}
			if got := files(t, dataDir); got != tt.want {
				t.Errorf("after GC:\n%s\nwant\n%s", got, tt.want)
			}
			if _, err := os.Stat(filepath.Join(other, "10.1.2.4")); err != nil {
				t.Errorf("GC touched another network: %v", err)
			}
		})
	}
}

func TestGCUnknownNetwork(t *testing.T) {
	dataDir := t.TempDir()
	mustRun(t, call{cmd: "GC", conf: conf("1.1.0", dataDir, dualStack, `"cni.dev/valid-attachments":[]`)})
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("GC of a network without leases created %v", entries)
	}
}

func TestStatus(t *testing.T) {
	small := `"ranges":[[{"subnet":"10.1.2.0/30"}]]` // one leasable address: .2
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dataDir string
		seed    map[string]string
		ipam    string
		err     string
	}{
		{name: "ready", ipam: small},
		{name: "ready_large_v6", ipam: `"ranges":[[{"subnet":"2001:db8::/64"}]]`, seed: map[string]string{"2001:db8::2": "x\r\neth0"}},
		{name: "exhausted", ipam: small, seed: map[string]string{"10.1.2.2": "x\r\neth0"}, err: "range set 0 (10.1.2.1-10.1.2.2) has no free address"},
		{name: "data_dir_unusable", dataDir: filepath.Join(notDir, "sub"), ipam: small, err: "cannot allocate"},
		{name: "invalid_config", ipam: `"ranges":[[{"subnet":"10.1.2.0/31"}]]`, err: "too small"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := tt.dataDir
			if dataDir == "" {
				dataDir = t.TempDir()
				seed(t, dataDir, tt.seed)
			}
			out, code := run(t, call{cmd: "STATUS", conf: conf("1.1.0", dataDir, tt.ipam)})
			if tt.err == "" {
				if code != 0 {
					t.Errorf("STATUS = %s, want success", out)
				}
				return
			}
			wantCode := uint(50)
			if tt.name == "invalid_config" {
				wantCode = 7
			}
			if gotCode, msg := errorOf(t, out); gotCode != wantCode || !strings.Contains(msg, tt.err) {
				t.Errorf("STATUS = %d %q, want %d %q", gotCode, msg, wantCode, tt.err)
			}
		})
	}
}
