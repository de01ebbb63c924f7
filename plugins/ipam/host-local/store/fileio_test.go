package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 1023, 1024, 5000, 70000} {
		want := bytes.Repeat([]byte("x"), size)
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := readFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("readFile(%d bytes) = %d bytes, %v", size, len(got), err)
		}
	}
	if _, err := readFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("readFile(missing) = %v, want not exist", err)
	}
}
