package iptables

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
	"cnisuite/test/userns"
)

// formatOwners are the attachments of the kernel golden files: a bridge
// attachment with masquerade and a spoof check, a portmap attachment, and
// one with user conditions (written by iptables-restore on both kinds of
// node).
func formatOwners(t *testing.T) []fwtest.Case {
	conds := fwtest.PortOwner
	conds.Network, conds.ContainerID = "net3", "ctr3"
	return []fwtest.Case{
		{Name: "bridge", Owner: fwtest.BridgeOwner, Rules: fwtest.BridgeRules(t)},
		{Name: "portmap", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(*fwapi.PortMaps) {})},
		{Name: "conditions", Owner: conds, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, "10.89.0.3/16"), nil
			p.Mappings = []fwapi.PortMapping{{HostPort: 8443, ContainerPort: 443, Protocol: "tcp"}}
			p.ConditionsV4 = []string{"!", "-s", "192.0.2.0/24"}
		})},
	}
}

// TestFormatKernelIPTables pins what the iptables backend leaves in the
// kernel on each kind of node (docs/formats.md, "iptables"): table nat as
// iptables-save and ip6tables-save print it (their dated comment lines
// left out), and our nftables tables beside it (the spoof check and the
// localnet guard, which both backends write with nftables). On
// iptables-nft it also pins the files of the jumps' handles, each handle
// checked to be the jump's in the kernel before it is normalized: a
// handle is a number the table draws.
func TestFormatKernelIPTables(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	for _, kind := range nodeKinds {
		t.Run(kind.name, func(t *testing.T) {
			inNS(t, func() {
				b := withWriter(kind.w())
				for _, c := range formatOwners(t) {
					if err := b.Ensure(ctx, c.Owner, c.Rules); err != nil {
						t.Fatalf("Ensure(%s): %v", c.Name, err)
					}
				}
				save6 := strings.Replace(kind.save, "iptables", "ip6tables", 1)
				got := "# " + kind.save + " -t nat\n" + saved(t, kind.save) +
					"# " + save6 + " -t nat\n" + saved(t, save6) +
					"# nft list ruleset: our tables\n" + ourTables(fwtest.Listing(t))
				if kind.name == "iptables-nft" {
					got += "# /run/cnisuite/iptables-jumps/<netns inode>/\n" + jumpFiles(t)
				}
				golden.Check(t, "format_kernel_"+kind.name, got)
			})
		})
	}
}

// saved returns `<save> -t nat` without its comment lines, which carry
// the time.
func saved(t *testing.T, save string) string {
	var out []string
	for _, l := range strings.SplitAfter(savedNAT(t, save), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// ourTables keeps the tables named cnisuite_* of an nft listing.
func ourTables(listing string) string {
	var out []string
	for _, table := range regexp.MustCompile(`(?m)^table `).Split(listing, -1) {
		if strings.Contains(strings.SplitN(table, "{", 2)[0], " cnisuite_") {
			out = append(out, "table "+table)
		}
	}
	return strings.Join(out, "")
}

// jumpFiles lists the jump files of the calling thread's network
// namespace, each handle replaced by <handle> once `nft -a` shows it is a
// jump of that built-in chain into an owner chain.
func jumpFiles(t *testing.T) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/thread-self/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(jumpsRoot, jumpsDir, strconv.FormatUint(st.Ino, 10))
	tree := golden.Tree(t, dir)
	line := regexp.MustCompile(`(?m)^-rw------- ([46])-\S+\n((?:\t\| \S+ \d+\n)+)`)
	checked := 0
	for _, m := range line.FindAllStringSubmatch(tree, -1) {
		family := map[string]string{"4": "ip", "6": "ip6"}[m[1]]
		for _, entry := range strings.Split(strings.TrimSpace(m[2]), "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(entry), "| "))
			listing, err := exec.Command("nft", "-a", "list", "chain", family, "nat", f[0]).CombinedOutput()
			if err != nil {
				t.Fatalf("nft -a list chain %s nat %s: %v: %s", family, f[0], err, listing)
			}
			if !regexp.MustCompile(`jump CNIS-\S+ # handle ` + f[1] + `\n`).Match(listing) {
				t.Errorf("%s %s %s: no jump into an owner chain with that handle:\n%s", family, f[0], f[1], listing)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatalf("no jump file with a handle in %s:\n%s", dir, tree)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory of mode 0700", dir, fi, err)
	}
	return regexp.MustCompile(`(?m)^(\t\| \S+) \d+$`).ReplaceAllString(tree, fmt.Sprintf("$1 %s", "<handle>"))
}
