package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/test/nodens"
	"cnisuite/test/sandbox"
)

// rootlessNerdctl is rootless containerd under RootlessKit
// (containerd-rootless.sh) driven by nerdctl, as the throwaway user, with
// its plugin directory bin, which the test switches.
type rootlessNerdctl struct {
	*rootlessUser
	bin      string
	childPid string // RootlessKit's child: the namespaces the plugins run in
}

// TestRootlessNerdctl runs containerd 2.x rootless under RootlessKit with
// nerdctl (the builds of scripts/install-runtimes.sh), as a throwaway
// user, on a network nerdctl made (with the reference's firewall plugin
// it insists on), and switches the plugins under running containers as
// TestRootlessPodman does: the reference's web1 running, ours give web3
// (served on 127.0.0.1:8080) another address and our DEL of web1 leaves
// nothing; back to the reference with web3 running, web4 gets another
// address, the reference's DEL of web3 and cnisuite gc (in RootlessKit's
// namespaces) leave nothing of it; nothing of ours in $XDG_RUNTIME_DIR.
// The leases are in ~/.local/share/cni/networks, which
// containerd-rootless.sh binds over /var/lib/cni.
func TestRootlessNerdctl(t *testing.T) {
	n := newNode(t)
	needTools(t, "runc", "curl", "slirp4netns", "newuidmap", "setpriv", "nsenter")
	c := newRootlessNerdctl(n)
	ref := sandbox.ReferencePlugins(t, "")

	c.switchTo(c.bin, ref)
	// nerdctl's own default network takes 10.4.0.0/24; it checks that the
	// plugins are there.
	c.must("network", "create", "rl", "--subnet", "10.5.0.0/24")
	web1, ip1 := c.run("web1", 8081)
	c.switchTo(c.bin, pluginDir(t))
	web3, ip3 := c.run("web3", 8080)
	if ip3 == ip1 {
		t.Fatalf("after the switch to ours, web3 got %s, which web1 holds from the reference", ip3)
	}
	if _, err := os.Stat(c.cniDir("networks/rl/" + ip3)); err != nil {
		t.Errorf("lease of web3 not in ~/.local/share/cni, the runtime's /var/lib/cni: %v", err)
	}
	n.fetch("http://127.0.0.1:8080/")
	c.must("rm", "-f", web1)
	c.requireClean(web1, ip1, true)

	c.switchTo(c.bin, ref)
	web4, ip4 := c.run("web4", 8082)
	if ip4 == ip3 {
		t.Fatalf("after the switch back, web4 got %s, which web3 holds from ours", ip4)
	}
	c.must("rm", "-f", web3)
	t.Logf("left after the reference's DEL of web3, for cnisuite gc:\n  %s", strings.Join(c.leftovers(web3, ip3, true), "\n  "))
	t.Logf("cnisuite gc: %s", n.Must("nsenter", "-U", "-S", "0", "-G", "0", "-m", "-n", "-t", c.childPid,
		"/opt/cni/bin/cnisuite-gc", "-bindir", "/opt/cni/bin", "-confdir", c.home+"/.config/cni/net.d", "-cachedir", "/var/lib/cni"))
	c.requireClean(web3, ip3, true, "/.host-local-index2/")
	n.fetch("http://127.0.0.1:8082/")
	c.must("rm", "-f", web4)
	// The reference's own DEL of web4 leaves its masquerade jump: nerdctl
	// deletes once the container's network namespace is gone, and the
	// reference finds the addresses to unmasquerade on the container's
	// interface. Not ours to check; its lease must go.
	c.requireClean(web4, ip4, false, "/.host-local-index2/")
	c.requireRuntimeDirClean()
}

// newRootlessNerdctl makes the user, its nerdctl configuration and plugin
// directory (with the reference's firewall plugin, which nerdctl's
// networks chain), starts containerd-rootless.sh and loads a busybox
// image.
func newRootlessNerdctl(n *node) *rootlessNerdctl {
	t := n.T
	t.Helper()
	rk := findRuntime(t, "rootlesskit", "rootlesskit")
	nc := findRuntime(t, "nerdctl", "nerdctl", "containerd-rootless.sh")
	cd := findRuntime(t, "containerd", "containerd", "containerd-shim-runc-v2")
	c := &rootlessNerdctl{rootlessUser: newRootlessUser(n, "nerdctl", rk.Bin, nc.Bin, cd.Bin), bin: "/opt/cni/rootless-bin"}
	n.Must("mkdir", "-p", "-m", "0755", c.bin)
	fw, err := os.ReadFile(filepath.Join(sandbox.ReferencePlugins(t, "meta/firewall"), "firewall"))
	if err != nil {
		t.Fatal(err)
	}
	n.WriteFile(c.bin+"/firewall", fw, 0o644)
	n.Must("chmod", "0755", c.bin+"/firewall")
	c.writeFiles(map[string]string{
		// cgroup v1: the user cannot make cgroups.
		"/.config/nerdctl/nerdctl.toml": fmt.Sprintf("cni_path = %q\ncgroup_manager = \"none\"\n", c.bin),
		"/busybox.tar":                  string(imageArchive(t, []imageSpec{{Ref: busyboxImage, Rootfs: busyboxRootfs(t), Cmd: []string{"/bin/sh"}}})),
	})
	c.own()
	c.start()
	c.must("load", "-i", c.home+"/busybox.tar")
	t.Cleanup(func() { _, _ = c.runtime("rm", "-f", "web1", "web3", "web4") }) // after a failure only
	return c
}

// start runs containerd-rootless.sh as the user until the test ends
// (the user's teardown, which runs first, ends its children) and waits for
// containerd to answer.
func (c *rootlessNerdctl) start() {
	t := c.n.T
	t.Helper()
	d := c.n.Start("setpriv", c.args("containerd-rootless.sh")...)
	ok := nodens.WaitFor(60*time.Second, func() bool {
		_, err := c.runtime("info")
		return err == nil
	})
	if !ok {
		t.Fatalf("rootless containerd did not answer:\n%s", d.Output())
	}
	pid, err := os.ReadFile(c.n.Path(c.xdg + "/containerd-rootless/child_pid"))
	if err != nil {
		t.Fatal(err)
	}
	c.childPid = strings.TrimSpace(string(pid))
}

// run starts a busybox httpd on network rl with hostPort → 80 and returns
// its full ID and the address of its eth0.
func (c *rootlessNerdctl) run(name string, hostPort int) (id, ip string) {
	c.n.T.Helper()
	id = lastLine(c.must("run", "-d", "--name", name, "--network", "rl", "-p", fmt.Sprintf("%d:80", hostPort),
		busyboxImage, "/bin/httpd", "-f", "-p", "80", "-h", "/www"))
	out := c.must("exec", name, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	if _, rest, ok := strings.Cut(out, "inet "); ok {
		ip, _, _ = strings.Cut(rest, "/")
	}
	if ip == "" {
		c.n.T.Fatalf("%s: no IPv4 address on eth0:\n%s", name, out)
	}
	c.n.T.Logf("%s: %s", name, ip)
	return id, ip
}

// cniDir is ~/.local/share/cni, which containerd-rootless.sh binds over
// /var/lib/cni in RootlessKit's namespace, seen from the test.
func (c *rootlessNerdctl) cniDir(sub string) string {
	return c.n.Path(filepath.Join(c.home, ".local/share/cni", sub))
}

// leftovers lists the plugins' state files (in ~/.local/share/cni and
// RootlessKit's copied-up /run) and, withRules, the rules of RootlessKit's
// network namespace that name the container or its address. The rules are
// dumped by the real root entering only that network namespace: RootlessKit
// made it together with its user namespace, whose root cannot list
// iptables-legacy's tables there.
func (c *rootlessNerdctl) leftovers(id, ip string, withRules bool) []string {
	found := sandbox.StateFiles([]string{c.cniDir("networks"), "/proc/" + c.childPid + "/root/run/cni",
		"/proc/" + c.childPid + "/root/run/cnisuite"}, id, ip)
	if !withRules {
		return found
	}
	return append(found, sandbox.RulesNaming(func(script string) (string, error) {
		return c.n.Run(time.Minute, "nsenter", "-n", "-t", c.childPid, "sh", "-c", script)
	}, id, ip)...)
}

// requireClean fails with leftovers but for paths holding one of allowed.
func (c *rootlessNerdctl) requireClean(id, ip string, withRules bool, allowed ...string) {
	c.n.T.Helper()
	if left := sandbox.Without(c.leftovers(id, ip, withRules), allowed...); len(left) > 0 {
		c.n.T.Errorf("container %.12s (%s) left after its removal:\n  %s", id, ip, strings.Join(left, "\n  "))
	}
}
