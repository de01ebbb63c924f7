package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// rootlessConflist is the network the rootless containers join: no
// dataDir, so the leases go where the runtime lets them.
const rootlessConflist = `{"cniVersion":"1.0.0","name":"rl","plugins":[
 {"type":"bridge","bridge":"cni-rl0","isGateway":true,"ipMasq":true,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.0.0/24","gateway":"10.89.0.1"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}},
 {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}}]}`

// rootlessSecondConflist is a second network, on another bridge and
// subnet, with a dataDir of none either.
const rootlessSecondConflist = `{"cniVersion":"1.0.0","name":"rl2","plugins":[
 {"type":"bridge","bridge":"cni-rl1","isGateway":true,"ipMasq":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.1.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}`

// rootlessContainersConf is the user's containers.conf: the CNI backend
// with its plugins in bin, the containers on a bridge (rootless podman
// defaults to slirp4netns, no CNI at all), cgroupfs on cgroup v1.
const rootlessContainersConf = `[containers]
netns = "bridge"
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "cni"
cni_plugin_dirs = [%q]
`

// rootlessPodman is rootless podman on a node: the user's home, runtime
// directory and rootfs, and the plugin directory its configuration names,
// whose binaries the test switches as a package upgrade or a rollback does.
type rootlessPodman struct {
	*rootlessUser
	rootfs, bin string
}

// TestRootlessPodman runs Debian's podman rootless, CNI backend, as a
// throwaway user, and switches the plugins under running containers as an
// upgrade and a rollback do: the reference's web1 running, ours give web3
// (served on 127.0.0.1:8080) another address, and our DEL of web1 leaves
// nothing; then back to the reference with web3 running, web4 gets another
// address, the reference's DEL of web3 and cnisuite gc (in podman's
// rootless network namespace) leave nothing of it and keep web4; once
// podman tore its rootless namespace down, nothing of ours is in
// $XDG_RUNTIME_DIR. A second network (web2) beside the first works and
// goes without a trace. Before (a7c1d57), ours gave web3 web1's address.
func TestRootlessPodman(t *testing.T) {
	n := newNode(t)
	needTools(t, "podman", "runc", "conmon", "curl", "slirp4netns", "newuidmap", "setpriv")
	p := newRootlessPodman(n)
	ref := sandbox.ReferencePlugins(t, "")

	p.switchTo(p.bin, ref)
	web1, ip1 := p.run("web1", 8081)
	p.switchTo(p.bin, pluginDir(t))
	web3, ip3 := p.run("web3", 8080)
	if ip3 == ip1 {
		t.Fatalf("after the switch to ours, web3 got %s, which web1 holds from the reference", ip3)
	}
	// The leases are where the reference keeps them, in what podman binds
	// over /var/lib/cni: what requireClean looks at.
	for _, ip := range []string{ip1, ip3} {
		if _, err := os.Stat(p.netnsDir("var/lib/cni/networks/rl/" + ip)); err != nil {
			t.Errorf("lease of %s not in podman's /var/lib/cni: %v", ip, err)
		}
	}
	n.fetch("http://127.0.0.1:8080/")
	p.must("rm", "-f", "-t", "0", web1)
	p.requireClean(web1, ip1, true)
	// A second network beside the first, on ours: its own bridge, subnet
	// and host port, and its removal leaves nothing of it.
	web2, ip2 := p.runOn("rl2", "web2", 8083)
	if !strings.HasPrefix(ip2, "10.89.1.") {
		t.Errorf("web2 on rl2 got %s, want an address of 10.89.1.0/24", ip2)
	}
	n.fetch("http://127.0.0.1:8083/")
	n.fetch("http://127.0.0.1:8080/")
	// podman stop alone tears the network down (our DEL); the container
	// stays, its removal later finds nothing more to do.
	p.must("stop", "-t", "0", web2)
	p.requireClean(web2, ip2, true)
	n.fetch("http://127.0.0.1:8080/")
	p.must("rm", "-f", "-t", "0", web2)
	p.requireClean(web2, ip2, true)

	p.switchTo(p.bin, ref)
	web4, ip4 := p.run("web4", 8082)
	if ip4 == ip3 {
		t.Fatalf("after the switch back, web4 got %s, which web3 holds from ours", ip4)
	}
	p.must("rm", "-f", "-t", "0", web3)
	t.Logf("left after the reference's DEL of web3, for cnisuite gc:\n  %s", strings.Join(p.leftovers(web3, ip3, true), "\n  "))
	t.Logf("cnisuite gc: %s", p.must("unshare", "--rootless-netns", "/opt/cni/bin/cnisuite-gc", "-bindir", "/opt/cni/bin",
		"-confdir", p.home+"/.config/cni/net.d", "-cachedir", "/var/lib/cni"))
	// Our index may still name web3 after the gc: the reference does not
	// know it, and it is never trusted once the reference changed the
	// directory (host-local's README, The index).
	p.requireClean(web3, ip3, true, "/.host-local-index2/")
	n.fetch("http://127.0.0.1:8082/")
	p.must("rm", "-f", "-t", "0", web4)
	p.requireClean(web4, ip4, false, "/.host-local-index2/")
	p.requireRuntimeDirClean()
	if _, err := os.Stat(p.netnsDir("")); !os.IsNotExist(err) {
		t.Logf("podman kept its rootless network namespace's directory: %v", err)
	}
}

// newRootlessPodman makes the throwaway user, its podman configuration
// and a busybox root filesystem it owns.
func newRootlessPodman(n *node) *rootlessPodman {
	n.T.Helper()
	p := &rootlessPodman{rootlessUser: newRootlessUser(n, "podman"), bin: "/opt/cni/rootless-bin"}
	p.rootfs = p.home + "/rootfs"
	p.writeFiles(map[string]string{
		"/.config/containers/containers.conf": fmt.Sprintf(rootlessContainersConf, p.bin),
		"/.config/containers/storage.conf":    "[storage]\ndriver = \"vfs\"\n",
		"/.config/containers/policy.json":     `{"default": [{"type": "insecureAcceptAnything"}]}`,
		"/.config/cni/net.d/rl.conflist":      rootlessConflist,
		"/.config/cni/net.d/rl2.conflist":     rootlessSecondConflist,
	})
	n.Must("cp", "-a", busyboxRootfs(n.T), p.rootfs)
	n.Must("mkdir", "-p", "-m", "0755", p.bin)
	p.own()
	n.T.Cleanup(func() { _, _ = p.runtime("rm", "-a", "-f", "-t", "0") }) // after a failure only; runs before the user's teardown
	return p
}

// run starts a busybox httpd on network rl with hostPort → 80 and returns
// its full ID and address.
func (p *rootlessPodman) run(name string, hostPort int) (id, ip string) {
	p.n.T.Helper()
	return p.runOn("rl", name, hostPort)
}

// runOn is run on network.
func (p *rootlessPodman) runOn(network, name string, hostPort int) (id, ip string) {
	p.n.T.Helper()
	id = lastLine(p.must("run", "-d", "--name", name, "--network", network, "-p", fmt.Sprintf("%d:80", hostPort),
		"--rootfs", p.rootfs, "/bin/httpd", "-f", "-p", "80", "-h", "/www"))
	ip = lastLine(p.must("inspect", "--format", fmt.Sprintf(`{{(index .NetworkSettings.Networks %q).IPAddress}}`, network), name))
	p.n.T.Logf("%s: %s", name, ip)
	return id, ip
}

// netnsDir is where podman keeps what it binds over /var/lib/cni and /run
// in its rootless network namespace, seen from the test.
func (p *rootlessPodman) netnsDir(sub string) string {
	return p.n.Path(filepath.Join(p.xdg, "libpod/tmp/rootless-netns", sub))
}

// leftovers lists the state files of the plugins (in the directories
// podman binds in its rootless network namespace) and, withRules, the
// rules there that name the container or its address.
func (p *rootlessPodman) leftovers(id, ip string, withRules bool) []string {
	found := sandbox.StateFiles([]string{p.netnsDir("var/lib/cni"), p.netnsDir("run/cni"), p.netnsDir("run/cnisuite")}, id, ip)
	if withRules {
		found = append(found, sandbox.RulesNaming(func(script string) (string, error) {
			return p.runtime("unshare", "--rootless-netns", "sh", "-c", script)
		}, id, ip)...)
	}
	return found
}

// requireClean fails with the lease, state files and (while the rootless
// network namespace lives: withRules) rules naming the container, but
// for files whose path holds one of allowed.
func (p *rootlessPodman) requireClean(id, ip string, withRules bool, allowed ...string) {
	p.n.T.Helper()
	// libcni's result cache is podman's.
	if left := sandbox.Without(p.leftovers(id, ip, withRules), append(allowed, "/var/lib/cni/results/")...); len(left) > 0 {
		p.n.T.Errorf("container %.12s (%s) left after its removal:\n  %s", id, ip, strings.Join(left, "\n  "))
	}
}
