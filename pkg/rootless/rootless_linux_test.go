package rootless

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"cnisuite/test/userns"
)

func TestIsInitialMap(t *testing.T) {
	for m, want := range map[string]bool{
		"         0          0 4294967295\n": true,
		"         0       1000          1\n": false,
		"0 100000 65536\n":                   false,
		"":                                   false,
	} {
		if got := isInitialMap(m); got != want {
			t.Errorf("isInitialMap(%q) = %v, want %v", m, got, want)
		}
	}
}

func TestLookupLastWins(t *testing.T) {
	env := []string{"XDG_RUNTIME_DIR=/a", "OTHER=1", "XDG_RUNTIME_DIR=/run/user/1000"}
	if got := lookup(env, "XDG_RUNTIME_DIR"); got != "/run/user/1000" {
		t.Errorf("lookup = %q", got)
	}
}

// Without the node's root, a state directory is the node's path whenever
// the probe can write there, $XDG_RUNTIME_DIR/cni/<name> when it cannot,
// and the node's path again when XDG_RUNTIME_DIR is unset or relative
// (the first write's error then says what to do).
func TestChoose(t *testing.T) {
	denied := errors.New("permission denied")
	for _, tc := range []struct {
		name     string
		env      []string
		probe    error
		want     string
		fellBack bool
	}{
		{"runtime made it writable", []string{"XDG_RUNTIME_DIR=/run/user/1000"}, nil, "/var/lib/cni/networks", false},
		{"not writable", []string{"XDG_RUNTIME_DIR=/run/user/1000"}, denied, "/run/user/1000/cni/networks", true},
		{"not writable, no XDG_RUNTIME_DIR", nil, denied, "/var/lib/cni/networks", false},
		{"not writable, relative XDG_RUNTIME_DIR", []string{"XDG_RUNTIME_DIR=run"}, denied, "/var/lib/cni/networks", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var probed []string
			probe := func(dir string) error { probed = append(probed, dir); return tc.probe }
			got, why := choose("/var/lib/cni/networks", "networks", tc.env, probe)
			if got != tc.want || (why != nil) != tc.fellBack {
				t.Errorf("choose = %q, %v; want %q, fell back %v", got, why, tc.want, tc.fellBack)
			}
			if tc.fellBack && !errors.Is(why, denied) {
				t.Errorf("why = %v, want the probe's error", why)
			}
			if len(probed) > 1 || (len(probed) == 1 && probed[0] != "/var/lib/cni/networks") {
				t.Errorf("probed %v, want at most the node's path once", probed)
			}
		})
	}
}

// Writable tries the directory itself, or the nearest parent that exists
// when it does not, and leaves nothing behind.
func TestWritable(t *testing.T) {
	base := t.TempDir()
	if err := Writable(base); err != nil {
		t.Errorf("Writable(%s) = %v, want nil", base, err)
	}
	missing := filepath.Join(base, "cni", "networks")
	if err := Writable(missing); err != nil {
		t.Errorf("Writable(%s) = %v, want nil (its parent %s can be written)", missing, err, base)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("the probe left %v in %s", entries, base)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Writable(filepath.Join(file, "sub")); err == nil {
		t.Errorf("Writable below a plain file = nil, want an error")
	}
	if os.Geteuid() == 0 {
		// Root (of the tests' user namespace) writes through any mode
		// bit, not through a read-only mount.
		userns.Require(t)
		if err := Writable(filepath.Join(readOnlyDir(t), "networks")); !errors.Is(err, syscall.EROFS) {
			t.Errorf("Writable below a read-only mount = %v, want read-only file system", err)
		}
		return
	}
	ro := filepath.Join(base, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := Writable(filepath.Join(ro, "networks")); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Writable below a 0500 directory = %v, want permission denied", err)
	}
}
