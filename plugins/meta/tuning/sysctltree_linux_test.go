package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"cnisuite/pkg/types"
	"cnisuite/test/sandbox"
)

func TestSysctlTree(t *testing.T) {
	root := fakeProcSys(t)
	tree, err := openSysctlTree(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for _, tc := range []struct {
		name, rel string
		wantErr   error // nil: resolves
	}{
		{"plain file", "net/ipv4/conf/eth0/rp_filter", nil},
		{"symlink inside net", "net/ipv4/conf/alias/rp_filter", nil},
		{"symlink escape", "net/evil/core_pattern", types.ErrInvalidConfig},
		{"missing file", "net/ipv4/conf/eth9/rp_filter", fs.ErrNotExist},
		{"outside net", "kernel/core_pattern", types.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tree.Get(tc.rel)
			if tc.wantErr == nil && (err != nil || got != "1") || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Get(%q) = %q, %v; want \"1\" or %v", tc.rel, got, err, tc.wantErr)
			}
			if err := tree.Set(tc.rel, "1"); tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Set(%q) = %v, want %v", tc.rel, err, tc.wantErr)
			}
		})
	}
	// A shorter value replaces a longer one whole; the file a link outside
	// net points at is never written.
	if err := tree.Set("net/ipv4/conf/eth0/rp_filter", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := tree.Set("net/ipv4/conf/alias/rp_filter", "2"); err != nil {
		t.Fatal(err)
	}
	if got, err := tree.Get("net/ipv4/conf/eth0/rp_filter"); err != nil || got != "2" {
		t.Errorf("rp_filter after writing 1000 then 2 = %q, %v; want \"2\"", got, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "kernel/core_pattern")); err != nil || string(data) != "core\n" {
		t.Errorf("kernel/core_pattern = %q, %v; want it untouched", data, err)
	}
}

// TestSysctlTreeNetlink: under the real /proc/sys, a per-interface IPv4
// setting that netlink writes with the same effect never opens the tree
// (no lookup whose cost grows with the node's namespaces), and /proc/sys
// shows the value written; a setting with side effects goes through the
// tree.
func TestSysctlTreeNetlink(t *testing.T) {
	sandbox.Require(t)
	err := sandbox.NewNS(t).Do(func() error {
		tree, err := openSysctlTree(procSys)
		if err != nil {
			return err
		}
		defer tree.Close()
		for _, v := range []string{"1", "0"} {
			if err := tree.Set("net/ipv4/conf/lo/arp_notify", v); err != nil {
				return err
			}
			if got, err := tree.Get("net/ipv4/conf/lo/arp_notify"); err != nil || got != v {
				t.Errorf("Get(arp_notify) after Set(%s) = %q, %v", v, got, err)
			}
			if data, err := os.ReadFile("/proc/sys/net/ipv4/conf/lo/arp_notify"); err != nil || string(data) != v+"\n" {
				t.Errorf("/proc/sys/net/ipv4/conf/lo/arp_notify after Set(%s) = %q, %v", v, data, err)
			}
		}
		if tree.fd >= 0 {
			t.Errorf("the tree was opened for arp_notify")
		}
		if _, err := tree.Get("net/ipv4/conf/lo/rp_filter"); err != nil {
			return err
		}
		if tree.fd < 0 {
			t.Errorf("rp_filter (its write announces the change) did not go through the tree")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
