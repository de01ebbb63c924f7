package e2e

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// page is what the containers serve at /index.html.
const page = "hello from cnisuite e2e\n"

// busyboxRootfs builds a container root filesystem from the static busybox
// (no image pull is possible here): every applet as a symlink in /bin, a
// passwd file, and /www/index.html for `httpd -f -p 80 -h /www`.
func busyboxRootfs(t testing.TB) string {
	t.Helper()
	bb := staticBusybox(t)
	root := t.TempDir()
	for _, d := range []string{"bin", "etc", "www", "proc", "sys", "dev", "tmp", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/passwd":     "root:x:0:0:root:/:/bin/sh\n",
		"etc/group":      "root:x:0:\n",
		"www/index.html": page,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// staticBusybox finds busybox and insists it is statically linked, since
// the root filesystem holds no libraries.
func staticBusybox(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p
		}
	}
	t.Fatal("no statically linked busybox: install busybox-static (scripts/install-e2e-deps.sh)")
	return ""
}
