package iptables

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"cnisuite/pkg/types"
	"cnisuite/test/userns"
)

// fakeNode is a machine with the given binaries (name → what the link
// resolves to), /proc files and nf_tables; it counts the PATH lookups and
// the processes asked.
type fakeNode struct {
	bins     map[string]string
	proc     map[string]bool
	nfTables error
	looked   int
	asked    int
}

func (f *fakeNode) node() node {
	return node{
		lookPath: func(file string) (string, error) {
			f.looked++
			if _, ok := f.bins[file]; ok {
				return "/usr/sbin/" + file, nil
			}
			return "", fs.ErrNotExist
		},
		evalLinks: func(path string) (string, error) { return "/usr/sbin/" + f.bins[path[len("/usr/sbin/"):]], nil },
		exists:    func(path string) bool { return f.proc[path] },
		nfTables:  func() error { return f.nfTables },
		ask:       func(context.Context, string) error { f.asked++; return nil },
	}
}

func binaries(variant string) map[string]string {
	return map[string]string{"iptables": variant, "ip6tables": variant,
		"iptables-restore": variant, "ip6tables-restore": variant}
}

var legacyModules = map[string]bool{"/proc/net/ip_tables_names": true, "/proc/net/ip6_tables_names": true}

// Each kind of node gets the right answer, and no process is started but
// on a legacy node whose modules are not loaded yet.
func TestUsableOnEachKindOfNode(t *testing.T) {
	cases := []struct {
		name      string
		node      *fakeNode
		nft       bool
		usable    bool
		processes int
	}{
		{"only iptables-nft", &fakeNode{bins: binaries("xtables-nft-multi")}, true, true, 0},
		{"iptables-nft, no nf_tables in the kernel", &fakeNode{bins: binaries("xtables-nft-multi"), nfTables: errors.New("EOPNOTSUPP")}, true, false, 0},
		{"only iptables-legacy, modules loaded", &fakeNode{bins: binaries("xtables-legacy-multi"), proc: legacyModules}, false, true, 0},
		{"only iptables-legacy, modules not loaded yet", &fakeNode{bins: binaries("xtables-legacy-multi")}, false, true, 2},
		{"only nftables", &fakeNode{bins: map[string]string{"nft": "nft"}}, false, false, 0},
		{"neither", &fakeNode{}, false, false, 0},
		{"iptables without iptables-restore", &fakeNode{bins: map[string]string{"iptables": "xtables-nft-multi", "ip6tables": "xtables-nft-multi"}}, true, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newOn(tc.node.node())
			if b.writer(); b.nft != tc.nft {
				t.Errorf("iptables-nft detected = %v, want %v", b.nft, tc.nft)
			}
			err := b.Usable(context.Background())
			if (err == nil) != tc.usable || err != nil && types.Code(err) != types.CodeNotAvailable {
				t.Errorf("Usable() = %v (code %d), want usable %v or code 50", err, types.Code(err), tc.usable)
			}
			if tc.node.asked != tc.processes {
				t.Errorf("Usable started %d processes, want %d", tc.node.asked, tc.processes)
			}
		})
	}
}

// On this machine kind (iptables-nft 1.8.9, nf_tables in the kernel), the
// real checks find iptables usable, read over netlink.
func TestUsableOnThisNode(t *testing.T) {
	userns.RequireStateDirs(t)
	b := New()
	if b.writer(); !b.nft {
		t.Skip("iptables is not iptables-nft here; the fakes above cover the other kinds of node")
	}
	if err := b.Usable(context.Background()); err != nil {
		t.Errorf("Usable() on an iptables-nft node = %v", err)
	}
}

// TestNewLooksNothingUp: a call whose network is on nftables builds the
// iptables backend too (the automatic choice holds both), so New must not
// look iptables up on PATH; its first use does, once.
func TestNewLooksNothingUp(t *testing.T) {
	f := &fakeNode{bins: binaries("xtables-nft-multi")}
	b := newOn(f.node())
	if f.looked != 0 {
		t.Fatalf("New looked %d tools up on PATH, want none", f.looked)
	}
	if _, ok := b.writer().(*nft); !ok || !b.nft {
		t.Fatalf("first use chose %T (nft %v), want the iptables-nft writer", b.w, b.nft)
	}
	looked := f.looked
	if b.writer(); f.looked != looked {
		t.Errorf("the second use looked %d more tools up, want none", f.looked-looked)
	}
}
