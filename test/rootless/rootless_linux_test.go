// Package rootless runs the plugins as rootless runtimes do: as an
// unprivileged user, made uid 0 of a user namespace of its own
// (unshare --user --map-root-user --net), with XDG_RUNTIME_DIR set.
package rootless

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// nobody is the unprivileged user the plugins run as.
const nobody = "65534"

// runRootless runs plugin with verb as nobody in a new user and network
// namespace, and returns its stdout and whether it exited 0.
func runRootless(t *testing.T, plugin, verb, stdin string, env ...string) (string, bool) {
	t.Helper()
	bin := sandbox.Bin(t)
	// The runtime's namespace (made with the user namespace) is the
	// container's; the plugin runs in one more, as a runtime's plugins
	// never run inside the container.
	script := `CNI_NETNS=/proc/$$/ns/net unshare --net -- "$0"`
	cmd := exec.Command("setpriv", "--reuid="+nobody, "--regid="+nobody, "--clear-groups", "--",
		"unshare", "--user", "--map-root-user", "--net", "--", "sh", "-c", script, filepath.Join(bin, plugin))
	cmd.Env = append([]string{"CNI_COMMAND=" + verb, "CNI_CONTAINERID=rootless-1", "CNI_IFNAME=eth0",
		"CNI_PATH=" + bin, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Logf("%s %s as nobody: %v; stderr: %s", plugin, verb, err, stderr.String())
	}
	return stdout.String(), err == nil
}

// userRuntimeDir makes a runtime directory owned by nobody, as
// /run/user/<uid> is.
func userRuntimeDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "xdg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

const hostLocalConf = `{"cniVersion":"1.1.0","name":"rootless-net","type":"bridge",
 "ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/24"}]]}}`

// host-local without a dataDir, run rootless by a runtime that made
// nothing writable (/var/lib/cni is the real root's): the lease goes under
// $XDG_RUNTIME_DIR/cni/networks and DEL releases it. Before, ADD failed
// with "mkdir /var/lib/cni/networks: permission denied" (buildkit#4352,
// nerdctl#2718).
func TestHostLocalRootless(t *testing.T) {
	sandbox.Require(t)
	xdg := userRuntimeDir(t)
	out, ok := runRootless(t, "host-local", "ADD", hostLocalConf, "XDG_RUNTIME_DIR="+xdg)
	if !ok {
		t.Fatalf("ADD as nobody in a user namespace: %s", out)
	}
	var res struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.IPs) != 1 {
		t.Fatalf("ADD result %s: %v", out, err)
	}
	ip, _, _ := strings.Cut(res.IPs[0].Address, "/")
	lease := filepath.Join(xdg, "cni", "networks", "rootless-net", ip)
	if data, err := os.ReadFile(lease); err != nil || !strings.HasPrefix(string(data), "rootless-1") {
		t.Fatalf("lease %s = %q, %v; want it naming the container", lease, data, err)
	}
	if out, ok := runRootless(t, "host-local", "DEL", hostLocalConf, "XDG_RUNTIME_DIR="+xdg); !ok {
		t.Fatalf("DEL as nobody: %s", out)
	}
	if _, err := os.Stat(lease); !os.IsNotExist(err) {
		t.Errorf("lease %s still there after DEL: %v", lease, err)
	}
}

// Without XDG_RUNTIME_DIR and without a dataDir it can write, ADD fails
// with code 5 saying what to do.
func TestHostLocalRootlessNoRuntimeDir(t *testing.T) {
	sandbox.Require(t)
	out, ok := runRootless(t, "host-local", "ADD", hostLocalConf)
	if ok {
		t.Fatalf("ADD succeeded without a writable dataDir: %s", out)
	}
	var e struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Code != 5 || !strings.Contains(e.Msg, "ipam.dataDir") || !strings.Contains(e.Msg, "XDG_RUNTIME_DIR") {
		t.Errorf("ADD = %s, want code 5 naming ipam.dataDir and XDG_RUNTIME_DIR", out)
	}
}

// tuningConf sets a sysctl of the container's lo (the only interface of
// the runtime's namespace here) with no dataDir.
const tuningConf = `{"cniVersion":"1.1.0","name":"rootless-tune","type":"tuning",
 "sysctl":{"net.ipv4.conf.lo.arp_ignore":"1"},
 "prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"lo","sandbox":"/proc/self/ns/net"}]}}`

// tuning without a dataDir, run rootless by a runtime that made nothing
// writable: its state goes under $XDG_RUNTIME_DIR/cni/tuning and DEL
// removes it.
func TestTuningRootless(t *testing.T) {
	sandbox.Require(t)
	xdg := userRuntimeDir(t)
	env := []string{"XDG_RUNTIME_DIR=" + xdg, "CNI_IFNAME=lo"}
	if out, ok := runRootless(t, "tuning", "ADD", tuningConf, env...); !ok {
		t.Fatalf("ADD as nobody in a user namespace: %s", out)
	}
	state := filepath.Join(xdg, "cni", "tuning", "rootless-1_lo.json")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state file: %v", err)
	}
	if out, ok := runRootless(t, "tuning", "DEL", tuningConf, env...); !ok {
		t.Fatalf("DEL as nobody: %s", out)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state file still there after DEL: %v", err)
	}
}

// An allow-list that exists but cannot be read is an error (code 5), never
// a silent "no list, every net.* key allowed".
func TestTuningUnreadableAllowList(t *testing.T) {
	sandbox.Require(t)
	const list = "/etc/cni/tuning/allowlist.conf"
	if err := os.MkdirAll(filepath.Dir(list), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(list, []byte("^net\\.core\\..*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(list) })
	out, ok := runRootless(t, "tuning", "ADD", tuningConf, "XDG_RUNTIME_DIR="+userRuntimeDir(t), "CNI_IFNAME=lo")
	if ok || !strings.Contains(out, `"code": 5`) || !strings.Contains(out, "allow-list") {
		t.Errorf("ADD with an unreadable allow-list = %s, want code 5 naming it", out)
	}
}
