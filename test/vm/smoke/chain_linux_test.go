package smoke

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// chainConf is the chain as a node writes it: %[1]s is the firewall
// backend, %[2]s the bridge, %[3]s the lease directory, %[4]s the subnet,
// %[5]s tuning's state directory.
const chainConf = `{"cniVersion":"1.1.0","name":"smoke-%[1]s","plugins":[
  {"type":"bridge","bridge":%[2]q,"isGateway":true,"ipMasq":true,"ipMasqBackend":%[1]q,"hairpinMode":true,
   "ipam":{"type":"host-local","dataDir":%[3]q,"ranges":[[{"subnet":%[4]q}]],"routes":[{"dst":"0.0.0.0/0"}]}},
  {"type":"tuning","mtu":1400,"dataDir":%[5]q},
  {"type":"portmap","backend":%[1]q,"capabilities":{"portMappings":true}}]}`

// chain is one network of the test, with its state directories.
type chain struct {
	rt              *libcni.CNIConfig
	list            *libcni.NetworkConfigList
	bridge          string
	leases, tuneDir string
}

// member is one attached container.
type member struct {
	ns *ns.NetNS
	rc *libcni.RuntimeConf
	ip net.IP
}

// TestChain: with each backend, container a serves on port 80 behind host
// port 8080; the node (on its gateway address and on 127.0.0.1) and
// container b (hairpin) fetch from it through the mapping; tuning set the
// MTU; CHECK passes; after DEL of both no port, lease, tuning state or rule
// naming them is left.
func TestChain(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{"nftables", "iptables"} {
		t.Run(backend, func(t *testing.T) {
			c := newChain(t, backend, i)
			gw := net.IPv4(10, byte(96+i), 0, 1)
			a := c.attach(t, "smoke-a", 8080)
			b := c.attach(t, "smoke-b", 0)
			sandbox.Serve(t, a.ns, "tcp", ":80", func(net.Conn) string { return "smoke-a" })
			wantMTU(t, a.ns, 1400)
			for _, f := range []struct {
				what string
				from *ns.NetNS
				ip   net.IP
			}{{"the node via its gateway address", nil, gw}, {"the node via 127.0.0.1", nil, net.IPv4(127, 0, 0, 1)}, {"container b", b.ns, gw}} {
				if got, err := fetch(f.from, f.ip, 8080); got != "smoke-a" {
					t.Errorf("from %s, %v:8080 answered %q, %v; want smoke-a", f.what, f.ip, got, err)
				}
			}
			if err := c.rt.CheckNetworkList(context.Background(), c.list, a.rc); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			if rules := ruleset(t); !strings.Contains(rules, a.ip.String()) {
				t.Fatalf("no rule names %v after ADD; the leftover check would prove nothing:\n%s", a.ip, rules)
			}
			for _, m := range []*member{a, b} {
				if err := c.rt.DelNetworkList(context.Background(), c.list, m.rc); err != nil {
					t.Fatalf("DEL %s: %v", m.rc.ContainerID, err)
				}
			}
			c.wantNothingLeft(t, a, b)
		})
	}
}

func newChain(t *testing.T, backend string, i int) *chain {
	c := &chain{bridge: fmt.Sprintf("smk%d", i), leases: t.TempDir(), tuneDir: t.TempDir()}
	sandbox.RemoveLinkAtEnd(t, c.bridge)
	conf := fmt.Sprintf(chainConf, backend, c.bridge, c.leases, fmt.Sprintf("10.%d.0.0/24", 96+i), c.tuneDir)
	c.rt, c.list = sandbox.Runtime(t), sandbox.ConfList(t, conf)
	return c
}

// attach adds a fresh container, mapping hostPort to its port 80 unless 0.
func (c *chain) attach(t *testing.T, id string, hostPort int) *member {
	t.Helper()
	m := &member{ns: sandbox.NewNS(t)}
	m.rc = &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: m.ns.Path()}
	if hostPort != 0 {
		m.rc.CapabilityArgs = map[string]any{"portMappings": []map[string]any{
			{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}}}
	}
	if _, err := c.rt.AddNetworkList(context.Background(), c.list, m.rc); err != nil {
		t.Fatalf("ADD %s: %v", id, err)
	}
	t.Cleanup(func() { _ = c.rt.DelNetworkList(context.Background(), c.list, m.rc) }) // after a failure only
	err := m.ns.Do(func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil || len(addrs) == 0 {
			return fmt.Errorf("no IPv4 address on eth0: %v", err)
		}
		m.ip = addrs[0].IP
		return nil
	})
	if err != nil {
		t.Fatalf("container %s: %v", id, err)
	}
	return m
}

// wantNothingLeft fails the test if a bridge port, a lease, a tuning state
// file or a firewall rule naming a or b is left.
func (c *chain) wantNothingLeft(t *testing.T, a, b *member) {
	t.Helper()
	wantNoPorts(t, c.bridge)
	for _, dir := range []string{c.leases, c.tuneDir} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			named := d.Name() + " " + string(data)
			if strings.Contains(named, "smoke-a") || strings.Contains(named, "smoke-b") || net.ParseIP(d.Name()) != nil {
				t.Errorf("state left after DEL: %s: %q", path, data)
			}
			return nil
		})
		if err != nil {
			t.Errorf("reading %s: %v", dir, err)
		}
	}
	rules := ruleset(t)
	for _, s := range []string{a.ip.String(), b.ip.String(), "smoke-a", "smoke-b"} {
		if strings.Contains(rules, s) {
			t.Errorf("rules naming %s left after DEL:\n%s", s, rules)
		}
	}
}

// ruleset is what nft and iptables-save list, every table and family.
//
// Equivalent to: nft list ruleset; iptables-save; ip6tables-save
func ruleset(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	for _, cmd := range [][]string{{"nft", "list", "ruleset"}, {"iptables-save"}, {"ip6tables-save"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
		all.Write(out)
	}
	return all.String()
}

// fetch connects from namespace from (nil = the test's own, the node) to
// ip:port and returns what the server wrote.
func fetch(from *ns.NetNS, ip net.IP, port int) (string, error) {
	var got []byte
	dial := func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(port)), 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a fresh conn: cannot fail
		got, err = io.ReadAll(c)
		return err
	}
	if from == nil {
		err := dial()
		return string(got), err
	}
	err := from.Do(dial)
	return string(got), err
}

// wantMTU fails the test unless eth0 in n has the MTU tuning set.
func wantMTU(t *testing.T, n *ns.NetNS, want int) {
	t.Helper()
	err := n.Do(func() error {
		l, err := netlink.LinkByName("eth0")
		if err == nil && l.Attrs().MTU != want {
			err = fmt.Errorf("MTU %d, want %d (tuning)", l.Attrs().MTU, want)
		}
		return err
	})
	if err != nil {
		t.Errorf("container eth0: %v", err)
	}
}
