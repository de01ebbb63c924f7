package crinode

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPinnedVersion(t *testing.T) {
	file := filepath.Join(t.TempDir(), "versions.env")
	if err := os.WriteFile(file, []byte("# comment\nCONTAINERD_VERSION=2.4.2\nCRIO_VERSION=1.34.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := PinnedVersion(file, "CRIO_VERSION"); err != nil || v != "1.34.0" {
		t.Errorf("PinnedVersion(CRIO_VERSION) = %q, %v; want 1.34.0", v, err)
	}
	if _, err := PinnedVersion(file, "CRITEST_VERSION"); err == nil {
		t.Errorf("PinnedVersion(CRITEST_VERSION) of a file without it did not fail")
	}
}

func TestFindBuildNamesMissingPrograms(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	t.Setenv("CNISUITE_RUNTIMES", cache)
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scripts", "runtime-versions.env"), []byte("ETCD_VERSION=3.6.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "etcd-3.6.5", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "etcd"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	b, missing, err := FindBuild(root, "etcd", "ETCD_VERSION", "etcd", "etcdctl")
	if err != nil {
		t.Fatal(err)
	}
	if b.Bin != bin || b.Version != "3.6.5" {
		t.Errorf("FindBuild = %+v, want version 3.6.5 in %s", b, bin)
	}
	if len(missing) != 1 || missing[0] != filepath.Join(bin, "etcdctl") {
		t.Errorf("missing = %v, want only %s", missing, filepath.Join(bin, "etcdctl"))
	}
}
