package rootless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// podmanBinds makes /var/lib/cni and /run writable as rootless podman does
// in its rootless network namespace: it binds directories of the user's
// $XDG_RUNTIME_DIR/libpod/tmp/rootless-netns over them, in a mount
// namespace of the user namespace (the script's).
const podmanBinds = `NETNSDIR=$XDG_RUNTIME_DIR/libpod/tmp/rootless-netns
	mkdir -p "$NETNSDIR/var/lib/cni" "$NETNSDIR/run" || exit 1
	mount --bind "$NETNSDIR/var/lib/cni" /var/lib/cni || exit 1
	mount --bind "$NETNSDIR/run" /run || exit 1
`

// tuneEth0 sets a sysctl of the container's eth0 with no dataDir.
const tuneEth0 = `{"cniVersion":"1.1.0","name":"rootless-br","type":"tuning",
 "sysctl":{"net.ipv4.conf.eth0.arp_ignore":"1"},
 "prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"/x"}]}}`

// stateScript attaches a container with bridge (removeEmptyBridge, so it
// takes its lock) and tuning, lists the state each kept and the user's
// runtime directory (but for the runtime's own libpod), then detaches it.
// Only the state of this network, container and bridge counts: the
// sandbox's /var/lib/cni and /run hold what other packages' tests left.
const stateScript = `CNI_NETNS=/proc/$$/ns/net unshare --net -- sh -c '
	printf %s "$CONF" | CNI_COMMAND=ADD "$BIN/bridge" >/dev/null; echo "@@add $?"
	printf %s "$TUNE" | CNI_COMMAND=ADD "$BIN/tuning" >/dev/null; echo "@@tune $?"
	echo @@state; find /var/lib/cni /run/cni /run/cnisuite -type f 2>/dev/null | grep -e rootless -e rlbr0 | sort
	echo @@xdg; find "$XDG_RUNTIME_DIR" -mindepth 1 -path "$XDG_RUNTIME_DIR/libpod" -prune -o -print
	printf %s "$TUNE" | CNI_COMMAND=DEL "$BIN/tuning"; echo "@@untune $?"
	printf %s "$CONF" | CNI_COMMAND=DEL "$BIN/bridge"; echo "@@del $?"
	echo @@after; find /var/lib/cni/networks/rootless-br /run/cni -name "10.*" -o -name "rootless-1*" 2>/dev/null
	echo @@xdgafter; find "$XDG_RUNTIME_DIR" -mindepth 1 -path "$XDG_RUNTIME_DIR/libpod" -prune -o -print
	echo @@end'
`

// A rootless runtime that made /var/lib/cni and /run writable (as podman
// does) gets its state where the reference plugins keep theirs: the lease
// in /var/lib/cni/networks, tuning's in /run/cni/tuning, bridge's lock in
// /run/cnisuite, nothing in $XDG_RUNTIME_DIR and no word on stderr. Before,
// all of it went under $XDG_RUNTIME_DIR/cni, where the reference never
// looks: switching plugins with a container running gave two containers
// one address (issue 44).
func TestStateWhereTheRuntimeMadeItWritable(t *testing.T) {
	sandbox.Require(t)
	xdg := userRuntimeDir(t)
	out, stderr := runUnshared(t, []string{"--net", "--mount"}, podmanBinds+stateScript, bridgeConf,
		"XDG_RUNTIME_DIR="+xdg, "TUNE="+tuneEth0)
	t.Logf("stderr: %s", stderr)
	if !strings.Contains(out, "@@add 0") || !strings.Contains(out, "@@tune 0") {
		t.Fatalf("ADD failed:\n%s", out)
	}
	state := section(out, "state")
	for _, want := range []string{"/var/lib/cni/networks/rootless-br/10.89.0.2\n", "/run/cni/tuning/rootless-1_eth0.json\n",
		"/run/cnisuite/bridge-locks/rlbr0\n"} {
		if !strings.Contains(state, want) {
			t.Errorf("no %s after ADD; state kept:\n%s", strings.TrimSpace(want), state)
		}
	}
	if x := section(out, "xdg"); x != "" {
		t.Errorf("state in $XDG_RUNTIME_DIR although /var/lib/cni and /run could be written:\n%s", x)
	}
	if strings.Contains(stderr, "cannot be written here") {
		t.Errorf("a fallback was announced although nothing fell back:\n%s", stderr)
	}
	if !strings.Contains(out, "@@untune 0") || !strings.Contains(out, "@@del 0") || section(out, "after") != "" {
		t.Errorf("DEL failed or left state:\n%s", out)
	}
	if x := section(out, "xdgafter"); x != "" {
		t.Errorf("state in $XDG_RUNTIME_DIR after DEL:\n%s", x)
	}
	// What the plugins wrote went into the runtime's directory, which goes
	// with its rootless namespace.
	lease := filepath.Join(xdg, "libpod/tmp/rootless-netns/var/lib/cni/networks/rootless-br/last_reserved_ip.0")
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("host-local's bookkeeping is not in the runtime's bound directory: %v", err)
	}
}

// A rootless runtime that made nothing writable (no binds: /var/lib/cni
// and /run are the real root's) gets its state under $XDG_RUNTIME_DIR/cni,
// and each call says so once on stderr.
func TestStateFallsBackToRuntimeDir(t *testing.T) {
	sandbox.Require(t)
	xdg := userRuntimeDir(t)
	out, stderr := runUnshared(t, []string{"--net"}, stateScript, bridgeConf, "XDG_RUNTIME_DIR="+xdg, "TUNE="+tuneEth0)
	if !strings.Contains(out, "@@add 0") || !strings.Contains(out, "@@tune 0") {
		t.Fatalf("ADD failed:\n%s\nstderr %s", out, stderr)
	}
	x := section(out, "xdg")
	for _, want := range []string{"/cni/networks/rootless-br/10.89.0.2\n", "/cni/tuning/rootless-1_eth0.json\n",
		"/cni/bridge-locks/rlbr0\n"} {
		if !strings.Contains(x, xdg+want) {
			t.Errorf("no $XDG_RUNTIME_DIR%s after ADD; runtime directory:\n%s", strings.TrimSpace(want), x)
		}
	}
	if s := section(out, "state"); s != "" {
		t.Errorf("state under the real root's directories:\n%s", s)
	}
	// Four calls, each told once (bridge's ADD and DEL fall back twice:
	// host-local's dataDir and the bridge's lock).
	if n := strings.Count(stderr, "cannot be written here"); n != 4 {
		t.Errorf("the fallback was announced %d times, want once per call (4):\n%s", n, stderr)
	}
	if !strings.Contains(out, "@@untune 0") || !strings.Contains(out, "@@del 0") || section(out, "after") != "" {
		t.Errorf("DEL failed or left state:\n%s", out)
	}
}
