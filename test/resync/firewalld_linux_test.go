package resync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/sysctl"
	"cnisuite/test/firewalld"
	"cnisuite/test/sandbox"
)

// TestFirewalldReload runs Debian's firewalld (a private system bus) in the
// node's namespace, where the pods' bridge lives, with FlushAllOnReload on
// and the trusted zone as default (a firewall that lets the pods through),
// on each of firewalld's backends. Each network (both backends and no
// backend key) gets a pod with a host port; `firewall-cmd --reload` runs;
// then `cnisuite resync`, and separately a running `cnisuite watch` and
// nothing else, must give the host port and the masquerade back, STATUS 0
// and CHECK passing, without changing a rule of firewalld's; DEL leaves
// nothing. firewalld's iptables backend flushes every iptables table on a
// reload, so it takes the iptables backend's rules (STATUS 51 in between);
// its nftables backend rebuilds only its own table, and takes nothing.
func TestFirewalldReload(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	// firewalld leaves empty tables behind: the package's next tests start
	// from an empty node again.
	t.Cleanup(func() { _ = exec.Command("nft", "flush", "ruleset").Run() })
	netns := fmt.Sprintf("/proc/%d/ns/net", os.Getpid())
	i := 40
	for _, fwb := range []string{"nftables", "iptables"} {
		t.Run("firewalld_"+fwb, func(t *testing.T) {
			fw := firewalld.Start(t, netns, "FirewallBackend="+fwb, "FlushAllOnReload=yes", "DefaultZone=trusted")
			for _, mode := range []string{"resync", "watch"} {
				if mode == "watch" {
					if ready := startWatch(t, tool); !strings.Contains(ready, "firewalld") {
						t.Fatalf("cnisuite watch: %q, want it listening to firewalld on the private bus", ready)
					}
				}
				for _, b := range backends {
					i++
					r := fwReset{fw: fw, fwBackend: fwb, watching: mode == "watch"}
					t.Run(backendName(b)+"/"+mode, func(t *testing.T) { r.run(t, tool, b, i) })
				}
			}
		})
	}
}

// fwReset is a firewalld reload, repaired by resync or by a watcher.
type fwReset struct {
	fw        *firewalld.Daemon
	fwBackend string
	watching  bool
}

func (r fwReset) run(t *testing.T, tool, backend string, i int) {
	ctx := context.Background()
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, backend, i)
	pod := n.add("pod-f")
	n.wantConnected(pod, "after ADD")
	if err := n.status(ctx); err != nil {
		t.Fatalf("STATUS after ADD: %v", err)
	}
	hits := takenBackend(t, backend) == "iptables"
	start := time.Now()
	r.fw.Reload()
	theirs := firewalldRules(t)
	if r.watching {
		n.waitConnected(pod, "the firewalld reload", start)
	} else {
		r.resync(t, n, pod, tool, hits)
	}
	if err := n.rt.CheckNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Errorf("CHECK after the repair: %v", err)
	}
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after the repair: %v", err)
	}
	// The repair may add iptables-nft's base chains (a reload deletes the
	// nat table): it must take nothing away.
	if d := lineDiff(theirs, firewalldRules(t)); strings.Contains("\n"+d, "\n-") {
		t.Errorf("the repair changed firewalld's rules (- after the reload, + now):\n%s", d)
	}
	if err := n.rt.DelNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.wantNothingLeft(t, pod)
}

// resync checks what the reload took (STATUS 51 and a silent host port
// when it hits the network's rules, STATUS 0 when not), runs cnisuite
// resync, and checks that a second one changes nothing.
func (r fwReset) resync(t *testing.T, n *node, pod *pod, tool string, hits bool) {
	ctx := context.Background()
	if hits {
		if got, err := ask(n.peer.ns, n.peer.nodeIP, 8080); err == nil {
			t.Fatalf("after the reload the host port still answers %q: the reload took nothing", got)
		}
		var e *cnitypes.Error
		if err := n.status(ctx); !errors.As(err, &e) || e.Code != 51 || !strings.Contains(e.Msg, n.name) {
			t.Errorf("STATUS after the reload = %v, want code 51 naming %s", err, n.name)
		}
	} else if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after a reload that took nothing of ours: %v", err)
	}
	out := sandbox.Run(t, tool, "resync")
	t.Logf("cnisuite resync:\n%s", out)
	if hits == strings.Contains(out, " 0 repaired") {
		t.Errorf("resync output %q: it should repair %v", out, hits)
	}
	n.wantConnected(pod, "after resync")
	before := ruleset(t)
	if out := sandbox.Run(t, tool, "resync"); !strings.Contains(out, "2 intact, 0 repaired") {
		t.Errorf("second resync: %q, want everything intact", out)
	}
	if after := ruleset(t); after != before {
		t.Errorf("second resync changed the ruleset (- before, + after):\n%s", lineDiff(before, after))
	}
}

// waitConnected waits (bounded) until the host port answers and the pod's
// egress is masqueraded, and logs how long it took since start.
func (n *node) waitConnected(p *pod, what string, start time.Time) {
	t := n.t
	t.Helper()
	var port, source string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		port, _ = ask(n.peer.ns, n.peer.nodeIP, 8080)
		source, _ = ask(p.ns, n.peer.peerIP, 9000)
		if port == p.id && source == n.peer.nodeIP.String() {
			t.Logf("after %s the host port and masquerade answer %s after it began", what, time.Since(start).Round(time.Millisecond))
			return
		}
	}
	t.Fatalf("after %s with the watcher running, the host port answers %q and the pod's egress comes from %q", what, port, source)
}

var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// firewalldRules is the node's ruleset without our objects (cnisuite_*
// tables, CNIS- chains and the rules naming them) and without counters:
// what firewalld (and iptables-nft's base chains) hold.
func firewalldRules(t *testing.T) string {
	t.Helper()
	var keep []string
	skipDepth := 0
	for _, l := range strings.Split(sandbox.Run(t, "nft", "-s", "list", "ruleset"), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case skipDepth > 0:
			skipDepth += strings.Count(l, "{") - strings.Count(l, "}")
		case strings.HasPrefix(trimmed, "table ") && strings.Contains(trimmed, " cnisuite"),
			strings.HasPrefix(trimmed, "chain CNIS-"):
			skipDepth = strings.Count(l, "{") - strings.Count(l, "}")
		case strings.Contains(l, "CNIS-"):
		default:
			keep = append(keep, counters.ReplaceAllString(l, ""))
		}
	}
	return strings.Join(keep, "\n")
}

// lineDiff lists the lines only in a ("-") and only in b ("+").
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, c := range count {
		for ; c > 0; c-- {
			out = append(out, "-"+l)
		}
		for ; c < 0; c++ {
			out = append(out, "+"+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
