package rootless

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/rootless"
	"cnisuite/test/sandbox"
)

// runtimeEnv marks this test binary run again as an imitated rootless
// runtime (nobody made uid 0 of a user namespace, with network and mount
// namespaces of its own); its value names the test to play there.
const runtimeEnv = "CNISUITE_ROOTLESS_RUNTIME"

// switchList is podman's default network as its CNI backend writes it
// (no dataDir: the leases go where the runtime made them), with a tuning
// sysctl and a host port so every plugin keeps state.
const switchList = `{"cniVersion":"0.4.0","name":"podman","plugins":[
 {"type":"bridge","bridge":"cni-podman0","isGateway":true,"ipMasq":true,"hairpinMode":true,
  "ipam":{"type":"host-local","routes":[{"dst":"0.0.0.0/0"}],"ranges":[[{"subnet":"10.88.0.0/16","gateway":"10.88.0.1"}]]}},
 {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}`

// switchNode is the rootless runtime's side: its namespaces, with
// /var/lib/cni and /run bound from the user's runtime directory as podman
// binds them, one network list and a client per set of plugins, sharing
// libcni's result cache at its default, /var/lib/cni.
type switchNode struct {
	t            *testing.T
	xdg, confDir string
	list         *libcni.NetworkConfigList
	ours, ref    *libcni.CNIConfig
	oursDir      string
}

// ctr is an attachment: a container's network namespace (held by a
// process of its own) and the address it was given.
type ctr struct {
	rc *libcni.RuntimeConf
	ip string
}

// Switching from the reference plugins to ours with a container running,
// rootless: ours never hands out the reference's address, and our DEL of
// the reference's attachment leaves nothing of it. Before, ours kept its
// leases under $XDG_RUNTIME_DIR/cni/networks, and web3 got web1's address
// (issue 44).
func TestRootlessSwitchToOurs(t *testing.T) {
	asRootlessRuntime(t, func(n *switchNode) {
		web1, web3 := n.addTwo(n.ref, n.ours)
		n.del(n.ours, web1)
		n.requireClean(web1)
		n.del(n.ours, web3)
		n.requireClean(web3)
		n.requireRuntimeDirClean()
	})
}

// Going back to the reference plugins with a container running, rootless:
// the reference never hands out our address, its DEL of our attachment
// releases the lease, and cnisuite gc, run in the runtime's namespaces with
// our plugins, removes what the reference does not know (our rules) and
// nothing of the live container. Before, the reference gave web3 web1's
// address, and its DEL left our lease under $XDG_RUNTIME_DIR (issue 44).
func TestRootlessSwitchToReference(t *testing.T) {
	asRootlessRuntime(t, func(n *switchNode) {
		web1, web3 := n.addTwo(n.ours, n.ref)
		n.del(n.ref, web1)
		before := n.leftovers(web1)
		if len(before) == 0 {
			t.Errorf("nothing of ours left after the reference's DEL of web1: nothing for cnisuite gc to show")
		}
		t.Logf("left after the reference's DEL of web1, for cnisuite gc:\n%s", strings.Join(before, "\n"))
		n.gc()
		n.requireClean(web1)
		if len(n.leftovers(web3)) == 0 {
			t.Errorf("cnisuite gc removed the lease and rules of the live web3")
		}
		n.del(n.ref, web3)
		// Our lease index, which the gc above rebuilt with web3 in it,
		// still names web3: the reference does not know it, and it is
		// never trusted once the reference changed the network's
		// directory (plugins/ipam/host-local/README.md, The index).
		n.requireClean(web3, "/.host-local-index2/")
		n.requireRuntimeDirClean()
	})
}

// asRootlessRuntime runs play as a rootless runtime runs its plugins: this
// test binary again, as nobody made uid 0 of a user namespace with network
// and mount namespaces of its own, where play then runs. The network
// namespace is made once the user namespace has its map, as podman makes
// its rootless one: the kernel gives its /proc/net files (iptables-legacy's
// table list) to the user namespace's root only then.
func asRootlessRuntime(t *testing.T, play func(*switchNode)) {
	if os.Getenv(runtimeEnv) == t.Name() {
		if rootless.NodeRoot() {
			t.Fatal("the imitated rootless runtime runs with the node's root")
		}
		play(newSwitchNode(t))
		return
	}
	sandbox.Require(t)
	ref := sandbox.ReferencePlugins(t, "")
	if err := os.Chmod(ref, 0o755); err != nil { // nobody runs them
		t.Fatal(err)
	}
	exe := executableFor(t)
	cmd := exec.Command("setpriv", "--reuid="+nobody, "--regid="+nobody, "--clear-groups", "--",
		"unshare", "--user", "--map-root-user", "--mount", "--", "unshare", "--net", "--",
		exe, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = []string{runtimeEnv + "=" + t.Name(), "XDG_RUNTIME_DIR=" + userRuntimeDir(t),
		"OURS=" + sandbox.Bin(t), "REFERENCE=" + ref, "TMPDIR=" + os.TempDir(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("as a rootless runtime: %v\n%s", err, out)
	}
	t.Logf("as a rootless runtime:\n%s", out)
}

// executableFor copies this test binary where any user can run it.
func executableFor(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "runtime-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "runtime.test")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

// newSwitchNode binds the runtime's directories over /var/lib/cni and /run
// (in the user namespace's own mount namespace) and writes the network.
func newSwitchNode(t *testing.T) *switchNode {
	n := &switchNode{t: t, xdg: os.Getenv("XDG_RUNTIME_DIR"), confDir: t.TempDir(), oursDir: os.Getenv("OURS")}
	netnsDir := filepath.Join(n.xdg, "libpod", "tmp", "rootless-netns")
	for _, dir := range []string{"/var/lib/cni", "/run"} {
		src := filepath.Join(netnsDir, dir)
		if err := os.MkdirAll(src, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s over %s: %v", src, dir, err)
		}
	}
	n.sh("ip link set lo up")
	if err := os.WriteFile(filepath.Join(n.confDir, "87-podman.conflist"), []byte(switchList), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := libcni.ConfListFromBytes([]byte(switchList))
	if err != nil {
		t.Fatal(err)
	}
	n.list = list
	n.ours = libcni.NewCNIConfigWithCacheDir([]string{n.oursDir}, "/var/lib/cni", nil)
	n.ref = libcni.NewCNIConfigWithCacheDir([]string{os.Getenv("REFERENCE")}, "/var/lib/cni", nil)
	return n
}

// addTwo attaches web1 through before, then web3 through after (the
// binaries switched with web1 running), and fails when web3 got web1's
// address.
func (n *switchNode) addTwo(before, after *libcni.CNIConfig) (web1, web3 *ctr) {
	n.t.Helper()
	web1 = n.add(before, "web1", 8080)
	web3 = n.add(after, "web3", 8081)
	if web3.ip == web1.ip {
		n.t.Fatalf("after the switch, web3 got %s, which web1 holds from before it", web3.ip)
	}
	return web1, web3
}

// add starts a container and attaches it through rt with hostPort → 80.
func (n *switchNode) add(rt *libcni.CNIConfig, name string, hostPort int) *ctr {
	n.t.Helper()
	c := &ctr{rc: &libcni.RuntimeConf{ContainerID: name + "-" + fmt.Sprint(os.Getpid()), NetNS: n.container(), IfName: "eth0",
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": hostPort, "containerPort": 80, "protocol": "tcp"}}}}}
	r, err := rt.AddNetworkList(context.Background(), n.list, c.rc)
	if err != nil {
		n.t.Fatalf("ADD %s: %v", name, err)
	}
	res, err := types100.NewResultFromResult(r)
	if err != nil || len(res.IPs) == 0 {
		n.t.Fatalf("ADD %s: result %v: %v", name, r, err)
	}
	c.ip = res.IPs[0].Address.IP.String()
	n.t.Logf("%s: %s", name, c.ip)
	return c
}

func (n *switchNode) del(rt *libcni.CNIConfig, c *ctr) {
	n.t.Helper()
	if err := rt.DelNetworkList(context.Background(), n.list, c.rc); err != nil {
		n.t.Fatalf("DEL %s: %v", c.rc.ContainerID, err)
	}
}

// container starts a process in a network namespace of its own, ended
// with the test, and returns the namespace's path.
func (n *switchNode) container() string {
	n.t.Helper()
	cmd := exec.Command("unshare", "--net", "--", "sleep", "600")
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	path := fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)
	own, _ := os.Readlink("/proc/self/ns/net")
	for i := 0; i < 500; i++ { // until unshare has made it: at most 5s
		if got, err := os.Readlink(path); err == nil && got != own {
			return path
		}
		time.Sleep(10 * time.Millisecond)
	}
	n.t.Fatal("the container's network namespace did not appear")
	return ""
}

// gc runs cnisuite gc with our plugins in the runtime's namespaces, as
// docs/operations.md says to after going back.
func (n *switchNode) gc() {
	n.t.Helper()
	out, err := exec.Command(filepath.Join(n.oursDir, "cnisuite-gc"), "-bindir", n.oursDir, "-confdir", n.confDir,
		"-cachedir", "/var/lib/cni").CombinedOutput()
	if err != nil {
		n.t.Fatalf("cnisuite-gc: %v\n%s", err, out)
	}
	n.t.Logf("cnisuite-gc: %s", out)
}

// leftovers lists the state files and rules that name c.
// (The user's runtime directory is requireRuntimeDirClean's.)
func (n *switchNode) leftovers(c *ctr) []string {
	found := sandbox.StateFiles([]string{"/var/lib/cni", "/run/cni", "/run/cnisuite"}, c.rc.ContainerID, c.ip)
	return append(found, sandbox.RulesNaming(n.shOut, c.rc.ContainerID, c.ip)...)
}

// requireClean fails with what leftovers finds of c, but for the paths
// holding one of allowed.
func (n *switchNode) requireClean(c *ctr, allowed ...string) {
	n.t.Helper()
	if left := sandbox.Without(n.leftovers(c), allowed...); len(left) > 0 {
		n.t.Errorf("%s (%s) left after its DEL:\n%s", c.rc.ContainerID, c.ip, strings.Join(left, "\n"))
	}
}

// requireRuntimeDirClean fails when anything of ours is in the user's
// runtime directory but for the runtime's own libpod (what podman
// removes with its rootless network namespace).
func (n *switchNode) requireRuntimeDirClean() {
	n.t.Helper()
	entries, err := os.ReadDir(n.xdg)
	if err != nil {
		n.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "libpod" {
			n.t.Errorf("left in $XDG_RUNTIME_DIR: %s", e.Name())
		}
	}
}

func (n *switchNode) sh(script string) {
	n.t.Helper()
	if out, err := n.shOut(script); err != nil {
		n.t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func (n *switchNode) shOut(script string) (string, error) {
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", script, err, out)
	}
	return string(out), nil
}
