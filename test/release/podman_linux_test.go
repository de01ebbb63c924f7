package release

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"cnisuite/pkg/ns"
	"cnisuite/test/firewalld"
	"cnisuite/test/release/debroot"
	"cnisuite/test/sandbox"
)

// podmanConflist is podman's default network on Debian 12, copied from
// /etc/cni/net.d of Debian's podman 4.3.1+ds1-8+deb12u1 package: bridge,
// portmap, then the reference's firewall and tuning.
const podmanConflist = "testdata/87-podman-bridge.conflist"

// podmanPod is one attachment of the podman network, driven through the
// runtime library from a node namespace of the test's own.
type podmanPod struct {
	t        *testing.T
	node     *ns.NetNS
	ctr      *ns.NetNS
	rt       *libcni.CNIConfig
	list     *libcni.NetworkConfigList
	rc       *libcni.RuntimeConf
	ip       string
	hostVeth string
}

// testPodmanNetwork installs Debian's containernetworking-plugins and then
// ours into a throwaway root and runs podman's default network from that
// root's /usr/lib/cni (our bridge, portmap and tuning, the reference's
// firewall): ADD, a page through the host port, CHECK, DEL, nothing left.
// The same with the reference's bandwidth, and its sbr,
// chained after; with firewalld running; and all of it again with the
// reference's current release of firewall, bandwidth and sbr.
func testPodmanNetwork(t *testing.T, s debroot.Suite) {
	sandbox.Require(t)
	need(t, "nft", "tc", "iptables")
	root := debroot.New(t)
	root.Install(debroot.ReferenceDeb(t))
	root.Install(s.Tools, s.Plugins)
	cniPath := root.Path("usr/lib/cni")
	data := readFile(t, podmanConflist)

	podmanCases(t, cniPath, data)
	// The same after ours, as the reference's current release builds them
	// (its firewall, bandwidth and sbr found first).
	t.Run("reference_v1.9.1", func(t *testing.T) {
		podmanCases(t, sandbox.ReferencePlugins(t, "meta/firewall meta/bandwidth meta/sbr")+":"+cniPath, data)
	})
}

// podmanCases runs podman's network (conflist data) on the plugins of
// cniPath: as shipped, with bandwidth chained, with sbr chained, with
// firewalld running.
func podmanCases(t *testing.T, cniPath string, data []byte) {
	t.Run("as_shipped", func(t *testing.T) {
		p := newPodmanPod(t, cniPath, data, nil)
		p.add()
		p.check()
		p.del()
	})
	t.Run("bandwidth_chained", func(t *testing.T) { testBandwidth(t, cniPath, data) })
	t.Run("sbr_chained", func(t *testing.T) { testSBR(t, cniPath, data) })
	t.Run("firewalld", func(t *testing.T) { testFirewalld(t, cniPath, data) })
}

// testSBR chains the reference's sbr: its rule sends the pod's traffic to
// its own table, where bridge's CHECK finds the routes sbr moved.
func testSBR(t *testing.T, cniPath string, data []byte) {
	p := newPodmanPod(t, cniPath, withPlugin(t, data, map[string]any{"type": "sbr"}), nil)
	p.add()
	rules, err := exec.Command("nsenter", "--net="+p.ctr.Path(), "ip", "rule", "show").CombinedOutput()
	if want := "from " + p.ip + " lookup 100"; err != nil || !strings.Contains(string(rules), want) {
		t.Errorf("ip rule in the pod: %v\n%s\nwant sbr's %q", err, rules, want)
	}
	p.check()
	p.del()
}

// testFirewalld runs podman's network with firewalld running in the node
// (a private system bus): the reference's firewall takes its firewalld
// backend and puts the pod's address in the trusted zone while the pod
// lives; host ports answer through our portmap beside firewalld's own
// ruleset, CHECK passes, and DEL leaves neither the source nor anything
// else; a firewalld reload meanwhile keeps the zone's source.
func testFirewalld(t *testing.T, cniPath string, data []byte) {
	p := newPodmanPod(t, cniPath, data, nil)
	fw := firewalld.Start(t, p.node.Path())
	p.add()
	if src := fw.Cmd("--zone=trusted", "--list-sources"); !strings.Contains(src, p.ip) {
		t.Errorf("trusted zone's sources while the pod lives: %q, want %s (the firewall plugin's firewalld backend)", src, p.ip)
	}
	p.check()
	p.del()
	if src := fw.Cmd("--zone=trusted", "--list-sources"); strings.Contains(src, p.ip) {
		t.Errorf("trusted zone's sources after DEL: %q still hold %s", src, p.ip)
	}
}

// testBandwidth chains the reference's bandwidth, limits from the runtime:
// its qdiscs are on the host veth while the pod lives, and neither they
// nor its ifb device are left after DEL.
func testBandwidth(t *testing.T, cniPath string, data []byte) {
	rate := map[string]any{"ingressRate": 8_000_000, "ingressBurst": 800_000,
		"egressRate": 8_000_000, "egressBurst": 800_000}
	bw := map[string]any{"type": "bandwidth", "capabilities": map[string]any{"bandwidth": true}}
	p := newPodmanPod(t, cniPath, withPlugin(t, data, bw), rate)
	p.add()
	if q := p.qdiscs(); !strings.Contains(q, "tbf") || !strings.Contains(q, "ingress") {
		t.Errorf("qdiscs of the host veth %s while the pod lives:\n%s\nwant bandwidth's tbf and ingress", p.hostVeth, q)
	}
	p.check()
	p.del()
	if q := p.run("tc", "qdisc", "show"); strings.Contains(q, "tbf") {
		t.Errorf("after DEL the node still has a tbf qdisc:\n%s", q)
	}
	if l := p.run("ip", "-o", "link", "show", "type", "ifb"); strings.TrimSpace(l) != "" {
		t.Errorf("after DEL the node still has bandwidth's ifb device:\n%s", l)
	}
}

// withPlugin appends a plugin to the end of the podman conflist's chain.
func withPlugin(t *testing.T, data []byte, plugin map[string]any) []byte {
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", podmanConflist, err)
	}
	plugins, _ := list["plugins"].([]any)
	list["plugins"] = append(plugins, plugin)
	out, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newPodmanPod(t *testing.T, cniPath string, conflist []byte, bandwidth map[string]any) *podmanPod {
	args := map[string]any{"portMappings": []map[string]any{{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}}}
	if bandwidth != nil {
		args["bandwidth"] = bandwidth
	}
	p := &podmanPod{t: t, node: sandbox.NewNS(t), ctr: sandbox.NewNS(t),
		rt:   libcni.NewCNIConfigWithCacheDir(strings.Split(cniPath, ":"), t.TempDir(), nil),
		list: sandbox.ConfList(t, string(conflist))}
	p.rc = &libcni.RuntimeConf{ContainerID: fmt.Sprintf("podman-%d", time.Now().UnixNano()),
		NetNS: p.ctr.Path(), IfName: "eth0", CapabilityArgs: args}
	// A node's loopback is up: the host port is reached on 127.0.0.1 too.
	if out, err := exec.Command("nsenter", "--net="+p.node.Path(), "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up in the node: %v\n%s", err, out)
	}
	return p
}

// inNode runs fn in the node namespace, where the runtime runs.
func (p *podmanPod) inNode(fn func() error) {
	p.t.Helper()
	if err := p.node.Do(fn); err != nil {
		p.t.Fatal(err)
	}
}

// add attaches the pod, serves a page on its port 80 and fetches it
// through host port 8080 on the gateway and on 127.0.0.1.
func (p *podmanPod) add() {
	p.t.Helper()
	p.inNode(func() error {
		res, err := p.rt.AddNetworkList(context.Background(), p.list, p.rc)
		if err != nil {
			return fmt.Errorf("ADD: %w", err)
		}
		r, err := types100.NewResultFromResult(res)
		if err != nil {
			return err
		}
		for _, ip := range r.IPs {
			p.ip = ip.Address.IP.String()
		}
		for _, i := range r.Interfaces {
			if i.Sandbox == "" && strings.HasPrefix(i.Name, "veth") {
				p.hostVeth = i.Name
			}
		}
		return nil
	})
	if p.ip == "" || p.hostVeth == "" {
		p.t.Fatalf("ADD: no address (%q) or host veth (%q) in the result", p.ip, p.hostVeth)
	}
	p.serve()
	for _, addr := range []string{"10.88.0.1:8080", "127.0.0.1:8080"} {
		var got string
		p.inNode(func() error { got = fetch(addr); return nil })
		if got != p.rc.ContainerID {
			p.t.Errorf("through host port %s: %q, want the pod's answer %q", addr, got, p.rc.ContainerID)
		}
	}
}

func (p *podmanPod) check() {
	p.t.Helper()
	p.inNode(func() error { return p.rt.CheckNetworkList(context.Background(), p.list, p.rc) })
}

// del detaches the pod and fails the test with anything left of it, after
// checking that the pod's veth, lease and rules were where leftovers looks.
func (p *podmanPod) del() {
	p.t.Helper()
	before := strings.Join(p.leftovers(), "\n  ")
	for _, kind := range []string{"veth: ", "state file: ", "rule: "} {
		if !strings.Contains(before, kind) {
			p.t.Errorf("while %s is attached, no %q among:\n  %s", p.rc.ContainerID, kind, before)
		}
	}
	p.inNode(func() error { return p.rt.DelNetworkList(context.Background(), p.list, p.rc) })
	if left := p.leftovers(); len(left) > 0 {
		p.t.Errorf("after DEL of %s (%s):\n  %s", p.rc.ContainerID, p.ip, strings.Join(left, "\n  "))
	}
}

// serve answers the container ID to every connection on port 80 of the
// pod, until the test ends.
func (p *podmanPod) serve() {
	p.t.Helper()
	sandbox.Serve(p.t, p.ctr, "tcp", ":80", func(net.Conn) string { return p.rc.ContainerID })
}

// fetch reads what answers at addr until the server closes, or the error,
// within 5 s.
func fetch(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "error: " + err.Error()
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "error: " + err.Error()
	}
	data, err := io.ReadAll(c)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(data))
}

// run runs a command in the node namespace and returns its output; a
// failure is the output.
func (p *podmanPod) run(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"--net=" + p.node.Path(), "--", name}, args...)
	out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// qdiscs lists the qdiscs of the pod's host veth.
func (p *podmanPod) qdiscs() string { return p.run("tc", "qdisc", "show", "dev", p.hostVeth) }

// leftovers lists what of the pod is still on the node: veths, state files
// naming its address or ID (leases, tuning's backups) and firewall rules
// naming either (nftables, which iptables-nft writes to, and
// iptables-legacy).
func (p *podmanPod) leftovers() []string {
	var found []string
	if out := strings.TrimSpace(p.run("ip", "-o", "link", "show", "type", "veth")); out != "" {
		found = append(found, "veth: "+out)
	}
	for _, dir := range []string{"/var/lib/cni", "/run/cni"} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil // a directory that is not there holds nothing
			}
			data, _ := os.ReadFile(path) // unreadable: judged by its name alone
			if d.Name() == p.ip || strings.Contains(path, p.rc.ContainerID) || strings.Contains(string(data), p.rc.ContainerID) {
				found = append(found, "state file: "+path)
			}
			return nil
		})
	}
	addr := regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(p.ip) + `([^0-9]|$)`)
	rules := p.run("nft", "list", "ruleset") + p.run("sh", "-c", "iptables-legacy-save 2>/dev/null || true")
	for _, line := range strings.Split(rules, "\n") {
		if addr.MatchString(line) || strings.Contains(line, p.rc.ContainerID) {
			found = append(found, "rule: "+strings.TrimSpace(line))
		}
	}
	return found
}
