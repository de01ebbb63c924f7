package resync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/sysctl"
	"cnisuite/test/firewalld"
	"cnisuite/test/sandbox"
)

// legacyNode makes this test's node an iptables-legacy one, as Debian's
// `update-alternatives --set iptables /usr/sbin/iptables-legacy` does: the
// iptables tools first on PATH (which the plugins, cnisuite and its
// helpers inherit) are xtables-legacy-multi, so the iptables backend
// writes with iptables-legacy-restore and the test's resets use
// iptables-legacy too.
func legacyNode(t *testing.T) {
	t.Helper()
	multi := "/usr/sbin/xtables-legacy-multi"
	if !fileExists(multi) {
		t.Fatalf("%s is not installed (Debian's iptables package has it)", multi)
	}
	dir := t.TempDir()
	for _, tool := range []string{"iptables", "ip6tables", "iptables-restore", "ip6tables-restore", "iptables-save", "ip6tables-save"} {
		if err := os.Symlink(multi, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// legacyResets are the resets of iptables on an iptables-legacy node:
// -F/-X and a restore of rules saved before the pod. They send no
// nftables event: only resync, a firewalld reload or the watcher's safety
// net repair them.
func legacyResets() []reset {
	var rs []reset
	for _, r := range resets {
		if strings.HasPrefix(r.name, "iptables_") {
			rs = append(rs, r)
		}
	}
	return rs
}

// TestLegacyNode: on an iptables-legacy node, iptables -t nat -F/-X and
// iptables-restore of a saved ruleset take the iptables backend's rules
// (and nothing of the nftables backend's); cnisuite resync puts them back
// with iptables-legacy (the runReset assertions: host port, masquerade,
// STATUS 51 then 0, CHECK, a second resync changes nothing, other
// software's rules untouched, DEL leaves nothing); and a running watcher,
// which hears no event of such a reset, repairs it by its safety net
// (shortened to 2 s for the test; a minute on a node), or at once when
// firewalld's Reloaded signal comes.
func TestLegacyNode(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	legacyNode(t)
	t.Run("resync", func(t *testing.T) {
		i := 80
		for _, b := range backends {
			for _, r := range legacyResets() {
				i++
				// runReset judges the reset by where iptables-save (here
				// iptables-legacy's) finds our chains: a backend that wrote
				// with iptables-nft would keep its host port and fail.
				t.Run(backendName(b)+"/"+r.name, func(t *testing.T) { runReset(t, tool, b, r, i) })
			}
		}
	})
	t.Run("watch_firewalld_reloaded", func(t *testing.T) { legacyReloaded(t, tool) })
	t.Run("watch", func(t *testing.T) {
		t.Setenv("CNISUITE_WATCH_SAFETY_INTERVAL", "2s")
		startWatch(t, tool)
		i := 90
		for _, b := range []string{"iptables"} { // the others' rules are not iptables-legacy's
			for _, r := range legacyResets() {
				i++
				t.Run(backendName(b)+"/"+r.name, func(t *testing.T) { watchReset(t, b, r, i) })
			}
		}
	})
}

// legacyReloaded: the watcher listens to firewalld's Reloaded signal on the
// system bus (a private one). After an iptables-legacy -t nat -F/-X,
// which sends no event, the host port stays dead (the safety net is a
// minute away); the signal alone, as firewalld sends it after a reload,
// makes the watcher repair: host port and masquerade back, STATUS 0, CHECK,
// DEL leaves nothing.
func legacyReloaded(t *testing.T, tool string) {
	ctx := context.Background()
	bus := firewalld.StartBus(t)
	if ready := startWatch(t, tool); !strings.Contains(ready, "firewalld") {
		t.Fatalf("cnisuite watch: %q, want it listening to firewalld on the private bus", ready)
	}
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, "iptables", 99)
	pod := n.add("pod-r")
	n.wantConnected(pod, "after ADD")
	for _, fam := range []string{"iptables", "ip6tables"} {
		sandbox.Run(t, fam, "-t", "nat", "-F")
		sandbox.Run(t, fam, "-t", "nat", "-X")
	}
	if got, err := ask(n.peer.ns, n.peer.nodeIP, 8080); err == nil {
		t.Fatalf("after iptables-legacy -t nat -F/-X the host port still answers %q", got)
	}
	start := time.Now()
	bus.SignalReloaded()
	n.waitConnected(pod, "firewalld's Reloaded signal", start)
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after the watcher's repair: %v", err)
	}
	if err := n.rt.CheckNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Errorf("CHECK after the watcher's repair: %v", err)
	}
	if err := n.rt.DelNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.wantNothingLeft(t, pod)
}
