package iptables

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// node is what Usable reads of the machine: the seam through which tests
// play each kind of node (only iptables-legacy, only iptables-nft, only
// nftables, neither).
type node struct {
	lookPath  func(file string) (string, error)
	evalLinks func(path string) (string, error)
	exists    func(path string) bool
	// nfTables asks the kernel's nf_tables, over netlink, whether it answers.
	nfTables func() error
	// ask runs `<cmd> -w -t nat -S POSTROUTING 1`: the one process Usable
	// may start, on a legacy node whose modules are not loaded yet.
	ask func(ctx context.Context, cmd string) error
}

// theNode is the running machine.
var theNode = node{
	lookPath:  lookPathOnce,
	evalLinks: filepath.EvalSymlinks,
	exists:    func(p string) bool { _, err := os.Stat(p); return err == nil },
	nfTables:  answersNFTables,
	ask:       askIPTables,
}

// lookPaths remembers exec.LookPath's answers for the process: choosing
// the backend and checking that it is usable look the same tools up on
// PATH (each a stat per PATH entry), and PATH does not change under a call.
var lookPaths sync.Map // file → lookResult

type lookResult struct {
	path string
	err  error
}

func lookPathOnce(file string) (string, error) {
	if r, ok := lookPaths.Load(file); ok {
		return r.(lookResult).path, r.(lookResult).err
	}
	path, err := exec.LookPath(file)
	lookPaths.Store(file, lookResult{path, err})
	return path, err
}

// toolNames are the binaries the backend runs.
var toolNames = []string{"iptables", "ip6tables", "iptables-restore", "ip6tables-restore"}

// isNFT reports whether both families' iptables are the nf_tables variant
// (xtables-nft-multi): reads and deletions then go over netlink.
func (n node) isNFT() bool {
	for _, cmd := range toolNames[:2] {
		path, err := n.lookPath(cmd)
		if err != nil {
			return false
		}
		real, err := n.evalLinks(path)
		if err != nil || !strings.HasPrefix(filepath.Base(real), "xtables-nft") {
			return false
		}
	}
	return true
}

// usable decides, without starting a process on almost every node, whether
// iptables works here: the four tools are installed, and the kernel side
// answers — nf_tables over netlink for iptables-nft; for iptables-legacy,
// the ip_tables and ip6_tables modules, which list their tables under
// /proc/net once loaded. Only when they are not loaded yet (iptables loads
// them on first use) does it ask iptables itself, one process per family.
func (n node) usable(ctx context.Context, nft bool) error {
	for _, cmd := range toolNames {
		if _, err := n.lookPath(cmd); err != nil {
			return types.Errorf(types.ErrNotAvailable, "iptables backend: %w", err)
		}
	}
	if nft {
		if err := n.nfTables(); err != nil {
			return types.Errorf(types.ErrNotAvailable, "iptables backend (iptables-nft): nf_tables does not answer: %w", err)
		}
		return nil
	}
	if n.exists("/proc/net/ip_tables_names") && n.exists("/proc/net/ip6_tables_names") {
		return nil
	}
	for _, cmd := range toolNames[:2] {
		if err := n.ask(ctx, cmd); err != nil {
			return err
		}
	}
	return nil
}

// answersNFTables sends nf_tables one request: does chain POSTROUTING of
// table ip nat exist. Either answer will do; an error means no nf_tables.
func answersNFTables() error {
	conn, err := netfilter.Dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ChainExists(unix.NFPROTO_IPV4, "nat", "POSTROUTING")
	return err
}

// askIPTables lists one rule of the nat table.
// Equivalent to: iptables -w -t nat -S POSTROUTING 1
func askIPTables(ctx context.Context, cmd string) error {
	out, err := exec.CommandContext(ctx, cmd, "-w", "-t", "nat", "-S", "POSTROUTING", "1").CombinedOutput()
	if err != nil {
		return types.Errorf(types.ErrNotAvailable, "iptables backend: %s: %w: %s", cmd, err, strings.TrimSpace(string(out)))
	}
	return nil
}
