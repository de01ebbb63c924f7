package sysctl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPath(t *testing.T) {
	fs := FS{Root: "/r"}
	tests := []struct {
		name, want string
		err        bool
	}{
		{"net.ipv4.ip_forward", "/r/net/ipv4/ip_forward", false},
		{"net/ipv4/conf/eth0.100/forwarding", "/r/net/ipv4/conf/eth0.100/forwarding", false},
		{"kernel.hostname", "", true},
		{"net/../kernel/hostname", "", true},
		{"net..ipv4", "", true},
		{"/net/ipv4/ip_forward", "", true},
		{"net", "", true},
	}
	for _, tt := range tests {
		got, err := fs.Path(tt.name)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("Path(%q) = %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrOutsideNet) {
			t.Errorf("Path(%q) error %v does not wrap ErrOutsideNet", tt.name, err)
		}
	}
}

func TestGetSetEnsure(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "net", "ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs := FS{Root: root}
	if err := os.WriteFile(filepath.Join(dir, "ip_forward"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := fs.Get("net.ipv4.ip_forward"); err != nil || v != "0" {
		t.Fatalf("Get = %q, %v; want 0", v, err)
	}
	if err := fs.Ensure("net.ipv4.ip_forward", "1"); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.Get("net.ipv4.ip_forward"); v != "1" {
		t.Fatalf("after Ensure, Get = %q; want 1", v)
	}
	if err := fs.Set("kernel.hostname", "x"); err == nil {
		t.Fatal("Set(kernel.hostname) = nil error; want refusal")
	}
}
