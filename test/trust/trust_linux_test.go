package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// chain is a network as users write it: bridge with host-local, portmap
// and tuning, on a firewall backend ("" when no key names one).
type chain struct {
	name, backend string
	n             int // its place: bridge, subnet and port
}

var chains = []chain{{"default", "", 1}, {"iptables", "iptables", 2}}

// plugins returns the chain's plugin configurations, in order.
func (c chain) plugins(t *testing.T) []map[string]any {
	br := map[string]any{"type": "bridge", "bridge": fmt.Sprintf("trbr%d", c.n), "isGateway": true, "ipMasq": true, "hairpinMode": true,
		"ipam": map[string]any{"type": "host-local", "dataDir": t.TempDir(), "ranges": [][]map[string]any{{{"subnet": fmt.Sprintf("10.%d.0.0/24", 140+c.n)}}}}}
	pm := map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}}
	if c.backend != "" {
		br["ipMasqBackend"], pm["backend"] = c.backend, c.backend
	}
	tu := map[string]any{"type": "tuning", "sysctl": map[string]any{"net.ipv4.conf.eth0.rp_filter": "2"}}
	return []map[string]any{br, pm, tu}
}

// node is one chain attached on the sandbox's node, and the loopback
// network every pod also gets.
type node struct {
	t         *testing.T
	c         chain
	rt        *libcni.CNIConfig
	list, lo  *libcni.NetworkConfigList
	confs     []map[string]any
	name, bin string
	cache     string // the runtime's result cache
}

func newNode(t *testing.T, c chain) *node {
	n := &node{t: t, c: c, confs: c.plugins(t), name: "trust-" + c.name, bin: sandbox.Bin(t), cache: t.TempDir()}
	n.rt = libcni.NewCNIConfigWithCacheDir([]string{n.bin}, n.cache, nil)
	data, err := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": n.name, "plugins": n.confs})
	if err != nil {
		t.Fatal(err)
	}
	n.list = sandbox.ConfList(t, string(data))
	n.lo = sandbox.ConfList(t, `{"cniVersion":"1.1.0","name":"lo","plugins":[{"type":"loopback"}]}`)
	sandbox.RemoveLinkAtEnd(t, n.confs[0]["bridge"].(string))
	return n
}

// pod is one container namespace attached to the node's chain.
type pod struct {
	id string
	ns *ns.NetNS
	rc *libcni.RuntimeConf
}

func (n *node) newPod(id string, hostPort int) *pod {
	p := &pod{id: id, ns: sandbox.NewNS(n.t)}
	p.rc = &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: p.ns.Path(),
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}}}}
	n.t.Cleanup(func() {
		_ = n.rt.DelNetworkList(context.Background(), n.list, p.rc) // a second DEL is success
	})
	return p
}

// verb is one call a runtime makes.
type verb struct {
	name string
	do   func(context.Context) error
}

// verbs are every verb of every plugin, as a runtime sends them for p:
// loopback's and the chain's ADD, CHECK, STATUS, GC keeping p, DEL, DEL
// again, GC keeping nothing.
func (n *node) verbs(p *pod) []verb {
	loRC := &libcni.RuntimeConf{ContainerID: p.id, IfName: "lo", NetNS: p.ns.Path()}
	keep := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: p.id, IfName: "eth0"}}}
	return []verb{
		{"loopback ADD", func(ctx context.Context) error { _, err := n.rt.AddNetworkList(ctx, n.lo, loRC); return err }},
		{"ADD", func(ctx context.Context) error { _, err := n.rt.AddNetworkList(ctx, n.list, p.rc); return err }},
		{"CHECK", func(ctx context.Context) error { return n.rt.CheckNetworkList(ctx, n.list, p.rc) }},
		{"loopback CHECK", func(ctx context.Context) error { return n.rt.CheckNetworkList(ctx, n.lo, loRC) }},
		{"STATUS", func(ctx context.Context) error { return n.rt.GetStatusNetworkList(ctx, n.list) }},
		{"GC keeping the pod", func(ctx context.Context) error { return n.rt.GCNetworkList(ctx, n.list, keep) }},
		{"DEL", func(ctx context.Context) error { return n.rt.DelNetworkList(ctx, n.list, p.rc) }},
		{"loopback DEL", func(ctx context.Context) error { return n.rt.DelNetworkList(ctx, n.lo, loRC) }},
		{"DEL again", func(ctx context.Context) error { return n.rt.DelNetworkList(ctx, n.list, p.rc) }},
		{"GC keeping nothing", func(ctx context.Context) error { return n.rt.GCNetworkList(ctx, n.list, &libcni.GCArgs{}) }},
		{"VERSION", func(ctx context.Context) error {
			_, err := n.rt.GetVersionInfo(ctx, "bridge")
			return err
		}},
	}
}

// victimLink makes a veth pair on the node (what a deputy would ask to
// delete: the node's uplink, say) and returns the index of one end.
func victimLink(t *testing.T) int {
	t.Helper()
	sandbox.RemoveLinkAtEnd(t, "trvictim")
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "trvictim"}, PeerName: "trvictimp"}); err != nil {
		t.Fatal(err)
	}
	l, err := netlink.LinkByName("trvictim")
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Index
}

// TestNothingOutlivesACall: after every verb of every plugin, on both
// firewall backends, no process of ours runs, no socket listens that did
// not before, and an unprivileged root process that asks every listener to
// delete a node link finds none that does (issue 41: a bridge DEL left a
// root process serving link deletions to any uid-0 peer).
func TestNothingOutlivesACall(t *testing.T) {
	sandbox.Require(t)
	bin := sandbox.Bin(t)
	base := listeners(t)
	victim := victimLink(t)
	for _, c := range chains {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t, c)
			p := n.newPod("trust-"+c.name, 8180+c.n)
			for _, v := range n.verbs(p) {
				if err := v.do(context.Background()); err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				wantNothingOfOurs(t, bin, v.name, base)
				wantDeputyRefused(t, v.name, victim, p.ns.Path())
			}
		})
	}
}

// wantDeputyRefused has the deputy ask every listener of the namespace to
// delete the victim link, and fails the test when anything changed: the
// victim, any link, address, route or rule of the node or of the pod.
func wantDeputyRefused(t *testing.T, what string, victim int, podNS string) {
	t.Helper()
	before := nodeState(t, podNS)
	report := askListeners(t, victim, listeners(t))
	if _, err := netlink.LinkByIndex(victim); err != nil {
		t.Errorf("after %s, an unprivileged process asked the listeners to delete link %d: it is gone (%v); deputy's report:\n%s", what, victim, err, report)
	}
	if after := nodeState(t, podNS); after != before {
		t.Errorf("after %s, an unprivileged process changed the node through us; deputy's report:\n%s\n%s", what, report, lineDiff(before, after))
	}
}

// lineDiff lists the lines only before or only after holds.
func lineDiff(before, after string) string {
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	var out []string
	for _, l := range added(a, b) {
		out = append(out, "- "+l)
	}
	for _, l := range added(b, a) {
		out = append(out, "+ "+l)
	}
	return strings.Join(out, "\n")
}

// TestNoBinaryLendsRights: no binary of ours is set-user-ID or
// set-group-ID or carries file capabilities, so running one never gives a
// caller rights it did not have.
func TestNoBinaryLendsRights(t *testing.T) {
	sandbox.Require(t)
	bin := sandbox.Bin(t)
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		path := filepath.Join(bin, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s is %v: set-ID bits lend its owner's rights", path, fi.Mode())
		}
		if _, err := unix.Getxattr(path, "security.capability", nil); err == nil {
			t.Errorf("%s carries file capabilities (security.capability)", path)
		}
	}
}

// TestDeputyRunsOurBinaries: an unprivileged root process that runs our
// binaries itself — every plugin's DEL and GC for a live pod, right after
// a privileged DEL of another pod, cnisuite resync, gc and the repair
// helper — changes no link, address, route or rule: what it runs acts with
// its own rights, and nothing of ours that a privileged call left acts for
// it.
func TestDeputyRunsOurBinaries(t *testing.T) {
	sandbox.Require(t)
	bin := sandbox.Bin(t)
	base := listeners(t)
	n := newNode(t, chains[0])
	live, other := n.newPod("trust-live", 8191), n.newPod("trust-other", 8192)
	ctx := context.Background()
	for _, p := range []*pod{live, other} {
		if _, err := n.rt.AddNetworkList(ctx, n.list, p.rc); err != nil {
			t.Fatalf("ADD %s: %v", p.id, err)
		}
	}
	// A privileged DEL first: what it might leave behind (a server, a
	// process) is there when the unprivileged runs begin.
	if err := n.rt.DelNetworkList(ctx, n.list, other.rc); err != nil {
		t.Fatalf("DEL %s: %v", other.id, err)
	}
	before := nodeState(t, live.ns.Path())
	for _, c := range n.deputyCommands(live) {
		out, err := c.CombinedOutput()
		t.Logf("unprivileged %s (%s): %v\n%s", strings.Join(c.Args[4:], " "), envOf(c, "CNI_COMMAND"), err, out)
	}
	if after := nodeState(t, live.ns.Path()); after != before {
		t.Errorf("unprivileged runs of our binaries changed the node:\n%s", lineDiff(before, after))
	}
	wantNothingOfOurs(t, bin, "the unprivileged runs", base)
}

// deputyCommands are the unprivileged runs of our binaries against the
// live pod p: each plugin's DEL, each GC keeping nothing, cnisuite resync
// and gc, and the repair helper asked directly.
func (n *node) deputyCommands(p *pod) []*exec.Cmd {
	env := []string{"CNI_CONTAINERID=" + p.id, "CNI_NETNS=" + p.ns.Path(), "CNI_IFNAME=eth0", "CNI_PATH=" + n.bin, "PATH=" + os.Getenv("PATH")}
	var cmds []*exec.Cmd
	plugin := func(typ, verb string, conf map[string]any) {
		conf = maps.Clone(conf)
		conf["cniVersion"], conf["name"] = "1.1.0", n.name
		data, _ := json.Marshal(conf) // maps of plain values: no error
		c := unprivileged(filepath.Join(n.bin, typ))
		c.Env = append([]string{"CNI_COMMAND=" + verb}, env...)
		c.Stdin = bytes.NewReader(data)
		cmds = append(cmds, c)
	}
	for _, conf := range n.confs {
		plugin(conf["type"].(string), "DEL", conf)
	}
	plugin("host-local", "DEL", map[string]any{"ipam": n.confs[0]["ipam"]})
	plugin("loopback", "DEL", map[string]any{"type": "loopback"})
	for _, conf := range n.confs {
		plugin(conf["type"].(string), "GC", conf)
	}
	confDir := n.t.TempDir()
	data, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": n.name, "plugins": n.confs})
	if err := os.WriteFile(filepath.Join(confDir, "10-trust.conflist"), data, 0o644); err != nil {
		n.t.Fatal(err)
	}
	tool := filepath.Join(n.bin, "cnisuite")
	cmds = append(cmds, unprivileged(tool, "resync"), unprivileged(tool, "resync", "-bindir", n.bin),
		unprivileged(tool, "gc", "-bindir", n.bin, "-confdir", confDir, "-cachedir", n.cache),
		unprivileged(filepath.Join(n.bin, "bridge"), "--cnisuite-helper", "cnisuite-repair"),
		unprivileged(filepath.Join(n.bin, "portmap"), "--cnisuite-helper", "cnisuite-repair"))
	return cmds
}

// envOf is the value of key in c's environment.
func envOf(c *exec.Cmd, key string) string {
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
