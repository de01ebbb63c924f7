package resync

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/records"
	"cnisuite/pkg/sysctl"
	"cnisuite/test/sandbox"
)

// reset is something other software does to the node.
type reset struct {
	name string
	cmds [][]string
	// hits reports whether the reset takes the attachment's connectivity
	// away with the given backend key.
	hits func(backend string) bool
	// restore, when set, makes cmds restore the iptables rulesets saved
	// before the pod was added (saved by prepare).
	restore bool
}

// prepare runs before the pod is added and returns the reset's commands:
// for a restore, the rulesets are saved now, as an admin's rules.v4 was
// saved before the pods started.
func (r reset) prepare(t *testing.T) [][]string {
	if !r.restore {
		return r.cmds
	}
	var cmds [][]string
	for _, fam := range []string{"iptables", "ip6tables"} {
		file := filepath.Join(t.TempDir(), fam+".rules")
		saved := sandbox.Run(t, fam+"-save")
		if !strings.Contains(saved, "*nat") {
			// A node that had no NAT rule yet: rules.v4 as
			// netfilter-persistent saves it still names the table.
			saved += "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n"
		}
		if err := os.WriteFile(file, []byte(saved), 0o600); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, []string{fam + "-restore", file})
	}
	return cmds
}

var resets = []reset{
	{"nft_flush_ruleset", [][]string{{"nft", "flush", "ruleset"}}, func(string) bool { return true }, false},
	// What an admin's iptables -t nat -F; -X does: only the iptables
	// backend keeps rules there.
	{"iptables_nat_F_X", [][]string{
		{"iptables", "-t", "nat", "-F"}, {"iptables", "-t", "nat", "-X"},
		{"ip6tables", "-t", "nat", "-F"}, {"ip6tables", "-t", "nat", "-X"},
	}, func(b string) bool { return b != "nftables" }, false},
	// What iptables-restore < rules.v4 does (netfilter-persistent, an
	// admin): the nat table goes back to a ruleset saved before the pods.
	{"iptables_restore_saved", nil, func(b string) bool { return b != "nftables" }, true},
	// What `sysctl --system` with a file saying ip_forward = 0 does.
	{"ip_forward_0", [][]string{{"sysctl", "-qw", "net.ipv4.ip_forward=0"}}, func(string) bool { return true }, false},
}

var backends = []string{"nftables", "iptables", ""}

// backendName names a backend key in a subtest's name.
func backendName(b string) string {
	if b == "" {
		return "no_backend_key"
	}
	return b
}

// takenBackend is the backend the network uses: the key's, or without one
// the node's choice (issue 27: nftables on this test's node, which holds
// no iptables NAT rule), read from where our chains are.
func takenBackend(t *testing.T, key string) string {
	if key != "" {
		return key
	}
	if strings.Contains(sandbox.Run(t, "iptables-save", "-t", "nat"), ":CNIS-") {
		return "iptables"
	}
	return "nftables"
}

// TestResyncAfterReset: a pod with a host port and masquerade; other
// software resets the firewall or forwarding; STATUS says 51 naming the
// network; cnisuite resync brings the host port (a TCP exchange from
// another namespace) and the masquerade (the source a server outside
// sees) back, touching no rule of other software; CHECK passes; STATUS is
// 0; a second resync changes nothing; DEL leaves nothing of ours.
func TestResyncAfterReset(t *testing.T) {
	sandbox.Require(t)
	tool := cnisuiteTool(t)
	i := 0
	for _, b := range backends {
		for _, r := range resets {
			i++
			t.Run(backendName(b)+"/"+r.name, func(t *testing.T) { runReset(t, tool, b, r, i) })
		}
	}
}

func runReset(t *testing.T, tool, backend string, r reset, i int) {
	ctx := context.Background()
	if err := sysctl.Set("net/ipv4/ip_forward", "0"); err != nil { // bridge's isGateway turns it on
		t.Fatal(err)
	}
	n := newNode(t, backend, i)
	cmds := r.prepare(t)
	pod := n.add("pod-a")
	n.wantConnected(pod, "after ADD")
	if err := n.status(ctx); err != nil {
		t.Fatalf("STATUS after ADD: %v", err)
	}
	taken := takenBackend(t, backend)
	for _, c := range cmds {
		sandbox.Run(t, c...)
	}
	if r.hits(taken) {
		if got, err := ask(n.peer.ns, n.peer.nodeIP, 8080); err == nil {
			t.Fatalf("after %s the host port still answers %q: the reset did not take effect", r.name, got)
		}
		var e *cnitypes.Error
		if err := n.status(ctx); !errors.As(err, &e) || e.Code != 51 || !strings.Contains(e.Msg, n.name) {
			t.Errorf("STATUS after %s = %v, want code 51 naming %s", r.name, err, n.name)
		} else {
			t.Logf("STATUS after %s: %s", r.name, e.Msg)
		}
	} else if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after %s, which took nothing of ours: %v", r.name, err)
	}
	other := plantOtherSoftware(t)
	before := ruleset(t)
	if out := sandbox.Run(t, tool, "resync", "-n"); r.hits(taken) == strings.Contains(out, n.name+": 2 attachments: 2 intact, 0 to repair") {
		t.Errorf("resync -n after %s: %q; it should find something to repair: %v", r.name, out, r.hits(taken))
	}
	if after := ruleset(t); after != before {
		t.Errorf("resync -n changed the ruleset:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	out := sandbox.Run(t, tool, "resync")
	t.Logf("cnisuite resync:\n%s", out)
	if want := " 0 repaired"; r.hits(taken) == strings.Contains(out, want) {
		t.Errorf("resync output %q: after %s it should repair %v", out, r.name, r.hits(taken))
	}
	n.wantConnected(pod, "after resync")
	if err := n.rt.CheckNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Errorf("CHECK after resync: %v", err)
	}
	if err := n.status(ctx); err != nil {
		t.Errorf("STATUS after resync: %v", err)
	}
	before = ruleset(t)
	if out := sandbox.Run(t, tool, "resync"); !strings.Contains(out, "2 intact, 0 repaired") {
		t.Errorf("second resync: %q, want everything intact", out)
	}
	if after := ruleset(t); after != before {
		t.Errorf("second resync changed the ruleset:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	other.wantUntouched(t)
	if err := n.rt.DelNetworkList(ctx, n.list, pod.rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.wantNothingLeft(t, pod)
}

// cnisuiteTool returns the cnisuite command: bin/'s (make build) or a
// fresh build.
func cnisuiteTool(t *testing.T) string {
	if p := filepath.Join(sandbox.Bin(t), "cnisuite"); fileExists(p) {
		return p
	}
	return filepath.Join(sandbox.BuildStamped(t, "test", "./cmd/cnisuite"), "cnisuite")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ruleset is the node's nftables ruleset (iptables-nft's rules included)
// and its iptables-legacy rules, without counters.
func ruleset(t *testing.T) string {
	t.Helper()
	s := sandbox.Run(t, "nft", "-s", "list", "ruleset") // stateless: no counters
	if out, err := exec.Command("iptables-legacy-save").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(l, "#") { // "# Generated by ... on <date>"
				s += counters.ReplaceAllString(l, "") + "\n"
			}
		}
	}
	return s
}

// otherSoftware is rules another program keeps on the node.
type otherSoftware struct{ nft, ipt string }

// plantOtherSoftware adds an nftables table and an iptables nat chain of
// another program, as one that rebuilds its rules after a reset would.
func plantOtherSoftware(t *testing.T) otherSoftware {
	sandbox.Run(t, "nft", "add table inet othersw; add chain inet othersw input { type filter hook input priority 10; }; "+
		"add rule inet othersw input tcp dport 9999 counter accept")
	sandbox.Run(t, "iptables", "-t", "nat", "-N", "OTHERSW")
	sandbox.Run(t, "iptables", "-t", "nat", "-A", "OTHERSW", "-p", "tcp", "--dport", "9998", "-j", "RETURN")
	t.Cleanup(func() {
		_ = exec.Command("nft", "delete", "table", "inet", "othersw").Run()
		_ = exec.Command("iptables", "-t", "nat", "-F", "OTHERSW").Run()
		_ = exec.Command("iptables", "-t", "nat", "-X", "OTHERSW").Run()
	})
	return otherSoftware{nft: sandbox.Run(t, "nft", "list", "table", "inet", "othersw"), ipt: sandbox.Run(t, "iptables", "-t", "nat", "-S", "OTHERSW")}
}

func (o otherSoftware) wantUntouched(t *testing.T) {
	t.Helper()
	if got := sandbox.Run(t, "nft", "list", "table", "inet", "othersw"); got != o.nft {
		t.Errorf("the other program's nftables table changed:\n%s\nwas:\n%s", got, o.nft)
	}
	if got := sandbox.Run(t, "iptables", "-t", "nat", "-S", "OTHERSW"); got != o.ipt {
		t.Errorf("the other program's iptables chain changed:\n%s\nwas:\n%s", got, o.ipt)
	}
}

// wantNothingLeft checks that DEL removed the pod's records and rules.
func (n *node) wantNothingLeft(t *testing.T, p *pod) {
	t.Helper()
	for _, plugin := range []string{"bridge", "portmap"} {
		if recs, err := (records.Store{}).List(plugin, n.name); err != nil || len(recs) != 0 {
			t.Errorf("%s records of %s after DEL: %+v, %v", plugin, n.name, recs, err)
		}
	}
	for _, l := range strings.Split(ruleset(t), "\n") {
		if strings.Contains(l, p.id) || strings.Contains(l, "CNIS-") || strings.Contains(l, p.addr.String()+" ") {
			t.Errorf("rule left after DEL: %s", strings.TrimSpace(l))
		}
	}
}
