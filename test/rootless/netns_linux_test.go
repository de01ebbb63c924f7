package rootless

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// runScript runs a shell script as nobody in a new user and network
// namespace (the runtime's, and the container's), with BIN the plugins'
// directory and CONF the configuration in its environment, and returns its
// stdout. The script runs the plugins in one more network namespace (the
// node of the rootless runtime), as runRootless does.
func runScript(t *testing.T, script, conf string, env ...string) string {
	t.Helper()
	stdout, stderr := runUnshared(t, []string{"--net"}, script, conf, env...)
	t.Logf("stderr of the script: %s", stderr)
	return stdout
}

// runUnshared runs a shell script as nobody made uid 0 of a new user
// namespace, in the new namespaces flags name (unshare's options), as
// runScript describes, and returns its stdout and stderr.
func runUnshared(t *testing.T, flags []string, script, conf string, env ...string) (string, string) {
	t.Helper()
	args := append([]string{"--reuid=" + nobody, "--regid=" + nobody, "--clear-groups", "--",
		"unshare", "--user", "--map-root-user"}, flags...)
	cmd := exec.Command("setpriv", append(args, "--", "sh", "-c", script)...)
	cmd.Env = append([]string{"BIN=" + sandbox.Bin(t), "CONF=" + conf, "CNI_CONTAINERID=rootless-1", "CNI_IFNAME=eth0",
		"CNI_PATH=" + sandbox.Bin(t), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("script as nobody: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// section returns what the script printed after "@@name" up to the next
// "@@" line.
func section(out, name string) string {
	_, rest, _ := strings.Cut(out, "@@"+name+"\n")
	body, _, _ := strings.Cut(rest, "@@")
	return body
}

const bridgeConf = `{"cniVersion":"1.1.0","name":"rootless-br","type":"bridge","bridge":"rlbr0",
 "isGateway":true,"ipMasq":true,"removeEmptyBridge":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.0.0/24"}]]}}`

// bridge and host-local run rootless in the runtime's own namespaces, as
// rootless podman runs its CNI plugins: ADD gives the container eth0 with
// its address, DEL removes it, releases the lease and removes the empty
// bridge (removeEmptyBridge: its lock under $XDG_RUNTIME_DIR/cni, as no
// bind made /run writable). Before, ADD failed
// with code 5 "isGateway: sysctl holds: mkdir /run/cnisuite: permission
// denied": the node's sysctl keeper is not the rootless runtime's (its
// `sysctl --system` never touches the runtime's namespace).
func TestBridgeRootless(t *testing.T) {
	sandbox.Require(t)
	xdg := userRuntimeDir(t)
	out := runScript(t, `CNI_NETNS=/proc/$$/ns/net unshare --net -- sh -c '
		printf %s "$CONF" | CNI_COMMAND=ADD "$BIN/bridge"; rc=$?; echo; echo "@@add $rc"
		echo @@addr; nsenter --net="$CNI_NETNS" ip -o -4 addr show dev eth0
		echo @@lease; ls "$XDG_RUNTIME_DIR/cni/networks/rootless-br"
		printf %s "$CONF" | CNI_COMMAND=DEL "$BIN/bridge"; echo "@@del $?"
		echo @@after; nsenter --net="$CNI_NETNS" ip -o link show dev eth0 2>&1
		echo @@bridgeafter; ip -o link show dev rlbr0 2>&1
		echo @@leaseafter; ls "$XDG_RUNTIME_DIR/cni/networks/rootless-br"
		echo @@end'`, bridgeConf, "XDG_RUNTIME_DIR="+xdg)
	if !strings.Contains(out, "@@add 0") || !strings.Contains(section(out, "addr"), "10.89.0.") {
		t.Fatalf("ADD as nobody in a user namespace did not give eth0 an address:\n%s", out)
	}
	if !strings.Contains(section(out, "lease"), "10.89.0.") {
		t.Errorf("no lease under $XDG_RUNTIME_DIR/cni/networks after ADD:\n%s", out)
	}
	if !strings.Contains(out, "@@del 0") || strings.Contains(section(out, "after"), "eth0:") {
		t.Errorf("DEL failed or left eth0:\n%s", out)
	}
	if strings.Contains(section(out, "leaseafter"), "10.89.0.") {
		t.Errorf("DEL left the lease:\n%s", out)
	}
	if strings.Contains(section(out, "bridgeafter"), "rlbr0:") {
		t.Errorf("DEL left the empty bridge (removeEmptyBridge, its lock under $XDG_RUNTIME_DIR/cni):\n%s", out)
	}
}

// A rootless plugin given a container namespace of another user namespace
// (here one the real root made) cannot enter it: ADD fails with code 4
// naming CNI_NETNS and why, instead of code 999 "operation not
// permitted"; DEL succeeds without the container side, so teardown ends.
func TestBridgeRootlessForeignNetns(t *testing.T) {
	sandbox.Require(t)
	const name = "rlforeign"
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	xdg := userRuntimeDir(t)
	out := runScript(t, `
		printf %s "$CONF" | CNI_COMMAND=ADD "$BIN/bridge"; rc=$?; echo; echo "@@add $rc"
		printf %s "$CONF" | CNI_COMMAND=DEL "$BIN/bridge"; echo "@@del $?"
		echo @@end`, bridgeConf, "XDG_RUNTIME_DIR="+xdg, "CNI_NETNS=/run/netns/"+name)
	add, _, _ := strings.Cut(out, "@@add")
	var e struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := json.Unmarshal([]byte(add), &e); err != nil || e.Code != 4 ||
		!strings.Contains(e.Msg, `CNI_NETNS "/run/netns/rlforeign"`) || !strings.Contains(e.Msg, "rootless") {
		t.Errorf("ADD = %s, want code 4 naming CNI_NETNS and the rootless runtime", add)
	}
	if !strings.Contains(out, "@@del 0") {
		t.Errorf("DEL after the refused ADD failed:\n%s", out)
	}
	if leases, _ := filepath.Glob(filepath.Join(xdg, "cni", "networks", "rootless-br", "10.*")); len(leases) > 0 {
		t.Errorf("leases left: %v", leases)
	}
}

// portmap runs rootless in the runtime's namespaces: ADD (with a route to
// the container, so that route_localnet is set and would be kept), CHECK
// and DEL succeed and DEL leaves no rule of the attachment. Before, ADD
// failed with "sysctl holds: mkdir /run/cnisuite: permission denied".
func TestPortmapRootless(t *testing.T) {
	sandbox.Require(t)
	conf := `{"cniVersion":"1.1.0","name":"rootless-pm","type":"portmap","backend":"nftables","allowPortRanges":true,
	 "runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":8000,"containerPort":8000,"protocol":"udp","range":10}]},
	 "prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"/x"}],"ips":[{"address":"10.89.0.2/24","interface":0}]}}`
	out := runScript(t, `CNI_NETNS=/proc/$$/ns/net unshare --net -- sh -c '
		ip link set lo up; ip route add 10.89.0.0/24 dev lo
		printf %s "$CONF" | CNI_COMMAND=ADD "$BIN/portmap" >/dev/null; echo "@@add $?"
		echo @@rules; nft list ruleset | grep -c "\" : 10.89.0.2"
		echo @@localnet; cat /proc/sys/net/ipv4/conf/lo/route_localnet
		printf %s "$CONF" | CNI_COMMAND=CHECK "$BIN/portmap"; echo "@@check $?"
		printf %s "$CONF" | CNI_COMMAND=DEL "$BIN/portmap"; echo "@@del $?"
		echo @@after; nft list ruleset | grep -c "\" : 10.89.0.2"
		echo @@end'`, conf, "XDG_RUNTIME_DIR="+userRuntimeDir(t))
	// What DNATs a port is its map element ("tcp . 8080 … : 10.89.0.2 . 80").
	if !strings.Contains(out, "@@add 0") || strings.TrimSpace(section(out, "rules")) != "2" {
		t.Fatalf("ADD as nobody in a user namespace did not write both DNAT elements:\n%s", out)
	}
	if strings.TrimSpace(section(out, "localnet")) != "1" {
		t.Errorf("route_localnet on the route's interface is not 1:\n%s", out)
	}
	if !strings.Contains(out, "@@check 0") || !strings.Contains(out, "@@del 0") {
		t.Errorf("CHECK or DEL failed:\n%s", out)
	}
	if strings.TrimSpace(section(out, "after")) != "0" {
		t.Errorf("DEL left DNAT elements:\n%s", out)
	}
}

// bridge with ipMasq and no backend key in a network namespace made
// together with its user namespace, as RootlessKit makes its child's
// without --detach-netns (containerd-rootless.sh of nerdctl 1.7): the
// namespace's /proc/net files stay the real root's, so iptables-legacy's
// table list cannot be read, and ADD still writes the masquerade and DEL
// removes it. Before, ADD failed with "reading the node's firewall: open
// /proc/thread-self/net/ip_tables_names: permission denied".
func TestBridgeRootlessNetnsMadeWithUserns(t *testing.T) {
	sandbox.Require(t)
	conf := strings.Replace(bridgeConf, `"removeEmptyBridge":true,`, "", 1)
	out := runScript(t, `
		unshare --net -- sleep 60 & ctr=$!
		export CNI_NETNS=/proc/$ctr/ns/net
		for i in $(seq 100); do [ "$(readlink $CNI_NETNS)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.05; done
		printf %s "$CONF" | CNI_COMMAND=ADD "$BIN/bridge"; rc=$?; echo; echo "@@add $rc"
		echo @@masq; nft list ruleset | grep -c "10.89.0.2"
		printf %s "$CONF" | CNI_COMMAND=DEL "$BIN/bridge"; echo "@@del $?"
		echo @@after; nft list ruleset | grep -c "10.89.0.2"
		kill $ctr
		echo @@end`, conf, "XDG_RUNTIME_DIR="+userRuntimeDir(t))
	if !strings.Contains(out, "@@add 0") || strings.TrimSpace(section(out, "masq")) == "0" {
		t.Fatalf("ADD with ipMasq in a network namespace made with its user namespace:\n%s", out)
	}
	if !strings.Contains(out, "@@del 0") || strings.TrimSpace(section(out, "after")) != "0" {
		t.Errorf("DEL failed or left rules:\n%s", out)
	}
}
