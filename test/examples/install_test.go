package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMakeInstall: `make install` puts every plugin, executable, under
// $(DESTDIR)$(PREFIX)/bin, as a packager or a node operator would run it.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	tmp := t.TempDir()
	cmd := exec.Command("make", "-C", "../..", "install",
		"BIN="+filepath.Join(tmp, "bin"), "DESTDIR="+filepath.Join(tmp, "root"), "PREFIX=/usr/libexec/cni")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap", "tuning"} {
		path := filepath.Join(tmp, "root", "usr/libexec/cni/bin", p)
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s not installed: %v", p, err)
			continue
		}
		if st.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s installed without execute permission: %v", p, st.Mode())
		}
	}
}
