package main

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/test/sandbox"
)

// ethtool runs the ethtool binary, a reader independent of the plugin, in
// the container with args and returns what it prints.
func (c container) ethtool(args ...string) string {
	c.t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		c.t.Fatalf("the ethtool binary, this test's independent reader, is missing (make deps installs it): %v", err)
	}
	out, err := exec.Command("nsenter", append([]string{"--net=" + c.netns.Path(), "ethtool"}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("ethtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// shows fails the test unless out has every line of want, whole.
func shows(t *testing.T, what, out string, want ...string) {
	t.Helper()
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("%s lacks the line %q:\n%s", what, w, out)
		}
	}
}

// currentChannels is the "Current hardware settings" part of ethtool -l.
func currentChannels(out string) string {
	if i := strings.Index(out, "Current hardware settings:"); i >= 0 {
		return out[i:]
	}
	return out
}

const ethtoolKeys = `,"features":{"tx-checksumming":false,"rx-gro":true},"channels":{"rx":2,"tx":3}`

// TestFeaturesAndChannels: ethtool -k and -l show the offloads off and the
// queue counts set while the attachment lives, a second ADD keeps the
// originals, CHECK finds each drift, and after DEL ethtool shows exactly
// what it showed before ADD.
func TestFeaturesAndChannels(t *testing.T) {
	sandbox.Require(t)
	for i, v := range []string{"0.4.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			c := newQueuesContainer(t, fmt.Sprintf("tuq%d", i), 4)
			beforeK, beforeL := c.ethtool("-k", testIfName), c.ethtool("-l", testIfName)
			shows(t, "ethtool -k before ADD", beforeK, "tx-checksumming: on", "tx-checksum-ip-generic: on",
				"tx-checksum-sctp: on", "generic-receive-offload: off")
			shows(t, "ethtool -l before ADD", currentChannels(beforeL), "RX:\t\t4", "TX:\t\t4")
			attrs, _ := c.snapshot()
			dataDir := t.TempDir()
			conf := pluginConf(t, fmt.Sprintf(`{"cniVersion":%q,"name":"tunenet","type":"tuning","dataDir":%q%s,"prevResult":%s}`,
				v, dataDir, ethtoolKeys, prevResultJSON(v, c.netns.Path(), attrs.MAC)))
			rt := &libcni.RuntimeConf{ContainerID: versionID("eth", v), NetNS: c.netns.Path(), IfName: testIfName}
			cni := sandbox.Runtime(t)
			if _, err := cni.AddNetwork(ctx, conf, rt); err != nil {
				t.Fatalf("ADD: %v", err)
			}
			shows(t, "ethtool -k after ADD", c.ethtool("-k", testIfName), "tx-checksumming: off",
				"tx-checksum-ip-generic: off", "tx-checksum-sctp: off", "generic-receive-offload: on")
			shows(t, "ethtool -l after ADD", currentChannels(c.ethtool("-l", testIfName)), "RX:\t\t2", "TX:\t\t3")
			wantStateFile(t, dataDir, rt.ContainerID)
			// A repeated ADD changes nothing and keeps the first originals.
			if _, err := cni.AddNetwork(ctx, conf, rt); err != nil {
				t.Fatalf("second ADD: %v", err)
			}
			checkEthtoolDrift(t, c, func() error { return cni.CheckNetwork(ctx, conf, rt) })
			if err := cni.DelNetwork(ctx, conf, rt); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if got := c.ethtool("-k", testIfName); got != beforeK {
				t.Errorf("ethtool -k after DEL:\n%s\nwant, as before ADD:\n%s", got, beforeK)
			}
			if got := c.ethtool("-l", testIfName); got != beforeL {
				t.Errorf("ethtool -l after DEL:\n%s\nwant, as before ADD:\n%s", got, beforeL)
			}
			wantNoStateFile(t, dataDir, rt.ContainerID)
		})
	}
}

// checkEthtoolDrift changes a feature and a channel count behind the
// plugin's back, with the ethtool binary, and wants CHECK to name each.
func checkEthtoolDrift(t *testing.T, c container, check func() error) {
	t.Helper()
	if err := check(); err != nil {
		t.Fatalf("CHECK after ADD: %v", err)
	}
	drifts := []struct {
		name, wantText  string
		change, putBack []string
	}{
		{"a group member", `features "tx-checksumming": tx-checksum-sctp of "eth0" is on, want off`,
			[]string{"-K", testIfName, "tx-checksum-sctp", "on"}, []string{"-K", testIfName, "tx-checksum-sctp", "off"}},
		{"a kernel name", `features "rx-gro": rx-gro of "eth0" is off, want on`,
			[]string{"-K", testIfName, "rx-gro", "off"}, []string{"-K", testIfName, "rx-gro", "on"}},
		{"a channel count", `channels.rx of "eth0" is 1, want 2`,
			[]string{"-L", testIfName, "rx", "1"}, []string{"-L", testIfName, "rx", "2"}},
	}
	for _, d := range drifts {
		c.ethtool(d.change...)
		err := check()
		if err == nil || !strings.Contains(err.Error(), d.wantText) {
			t.Errorf("CHECK after %s changed = %v, want an error containing %q", d.name, err, d.wantText)
		}
		c.ethtool(d.putBack...)
	}
	if err := check(); err != nil {
		t.Errorf("CHECK after putting everything back: %v", err)
	}
}

// TestEthtoolRefusals: what the driver cannot do is refused with code 7
// naming the key and value, and ethtool shows nothing changed, the MTU
// asked for alongside included.
func TestEthtoolRefusals(t *testing.T) {
	sandbox.Require(t)
	const v = "1.0.0"
	c := newQueuesContainer(t, "tur0", 4)
	attrs, _ := c.snapshot()
	beforeK, beforeL := c.ethtool("-k", testIfName), c.ethtool("-l", testIfName)
	tests := []struct{ name, keys, want, ifName string }{
		{"fixed off", `"features":{"tx-checksum-ipv4":true}`,
			`features "tx-checksum-ipv4": true: the driver of "eth0" has tx-checksum-ipv4 fixed off`, ""},
		{"fixed off among others", `"features":{"rx-gro":true,"loopback":true}`,
			`features "loopback": true: the driver of "eth0" has loopback fixed off`, ""},
		{"a group all fixed off", `"features":{"large-receive-offload":true}`,
			`features "large-receive-offload": true: the driver of "eth0" has all 1 of its features (rx-lro) fixed off`, ""},
		{"no such feature", `"features":{"tx-checksum-everything":false}`,
			`features "tx-checksum-everything": the kernel has no such feature`, ""},
		{"a short ethtool alias", `"features":{"gro":true}`, `features "gro": the kernel has no such feature`, ""},
		{"kept off by another feature", `"features":{"tx-checksumming":false,"tcp-segmentation-offload":true}`,
			`features "tcp-segmentation-offload": true: the kernel keeps tx-tcp-segmentation of "eth0" off, as other features require`, ""},
		{"channels above the maximum", `"channels":{"rx":9}`, `channels.rx 9: above the maximum of "eth0", 4`, ""},
		{"channels of a kind the driver lacks", `"channels":{"combined":2}`,
			`channels.combined 2: the driver of "eth0" has no combined channels`, ""},
		{"channels the driver refuses", `"channels":{"tx":0}`,
			`channels tx 0: the driver of "eth0" refused: setting channels of "eth0": refused by the kernel`, ""},
		{"a driver without channels", `"channels":{"rx":1}`, `channels: the driver of "lo" has no channel counts to set`, "lo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "state")
			conf := pluginConf(t, fmt.Sprintf(`{"cniVersion":%q,"name":"tunenet","type":"tuning","dataDir":%q,"mtu":1400,%s,"prevResult":%s}`,
				v, dataDir, tc.keys, prevResultJSON(v, c.netns.Path(), attrs.MAC)))
			rt := &libcni.RuntimeConf{ContainerID: "refused", NetNS: c.netns.Path(), IfName: cmp.Or(tc.ifName, testIfName)}
			_, err := sandbox.Runtime(t).AddNetwork(ctx, conf, rt)
			var ce *cnitypes.Error
			if !errors.As(err, &ce) || ce.Code != 7 || !strings.Contains(ce.Msg, tc.want) {
				t.Errorf("ADD = %v, want code 7 containing %q", err, tc.want)
			}
			if got := c.ethtool("-k", testIfName); got != beforeK {
				t.Errorf("ethtool -k after the refused ADD:\n%s\nwant, as before:\n%s", got, beforeK)
			}
			if got := c.ethtool("-l", testIfName); got != beforeL {
				t.Errorf("ethtool -l after the refused ADD:\n%s\nwant, as before:\n%s", got, beforeL)
			}
			if now, _ := c.snapshot(); now.MTU != attrs.MTU {
				t.Errorf("mtu after the refused ADD = %d, want %d", now.MTU, attrs.MTU)
			}
			if _, err := os.Stat(filepath.Join(dataDir, backup.FileName(rt.ContainerID, rt.IfName))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state file after the refused ADD: %v, want none", err)
			}
		})
	}
}

// TestFeaturesRandom tries random mixes of feature names (the kernel's and
// the groups), values and channel counts on a veth: each ADD either
// succeeds, and CHECK agrees, or is refused with code 7 and ethtool shows
// nothing changed; after DEL ethtool -k and -l print what they printed
// before. The seed is fixed, so a failure repeats.
func TestFeaturesRandom(t *testing.T) {
	sandbox.Require(t)
	const v, rounds = "1.0.0", 30
	c := newQueuesContainer(t, "tux0", 4)
	attrs, _ := c.snapshot()
	beforeK, beforeL := c.ethtool("-k", testIfName), c.ethtool("-l", testIfName)
	pool := featurePool(beforeK)
	rng := rand.New(rand.NewPCG(29, 4))
	cni := sandbox.Runtime(t)
	added := 0
	for i := range rounds {
		keys := randomKeys(rng, pool)
		dataDir := filepath.Join(t.TempDir(), "state")
		conf := pluginConf(t, fmt.Sprintf(`{"cniVersion":%q,"name":"tunenet","type":"tuning","dataDir":%q,%s,"prevResult":%s}`,
			v, dataDir, keys, prevResultJSON(v, c.netns.Path(), attrs.MAC)))
		rt := &libcni.RuntimeConf{ContainerID: fmt.Sprintf("rand%d", i), NetNS: c.netns.Path(), IfName: testIfName}
		_, err := cni.AddNetwork(ctx, conf, rt)
		var ce *cnitypes.Error
		switch {
		case err == nil:
			added++
			if err := cni.CheckNetwork(ctx, conf, rt); err != nil {
				t.Errorf("%s: CHECK right after ADD: %v", keys, err)
			}
			if err := cni.DelNetwork(ctx, conf, rt); err != nil {
				t.Errorf("%s: DEL: %v", keys, err)
			}
		case !errors.As(err, &ce) || ce.Code != 7:
			t.Errorf("%s: ADD = %v, want success or code 7", keys, err)
		}
		if got := c.ethtool("-k", testIfName); got != beforeK {
			t.Fatalf("%s: ethtool -k after ADD (%v) and DEL:\n%s\nwant, as before:\n%s", keys, err, got, beforeK)
		}
		if got := c.ethtool("-l", testIfName); got != beforeL {
			t.Fatalf("%s: ethtool -l after ADD (%v) and DEL:\n%s\nwant, as before:\n%s", keys, err, got, beforeL)
		}
	}
	t.Logf("%d of %d random ADDs succeeded", added, rounds)
	if added == 0 || added == rounds {
		t.Errorf("%d of %d random ADDs succeeded; the mix should hold both outcomes", added, rounds)
	}
}

// featurePool lists the names of ethtool -k output: kernel names and
// groups alike, without the [fixed] and [requested] notes.
func featurePool(shown string) []string {
	var names []string
	for _, l := range strings.Split(shown, "\n") {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && !strings.HasPrefix(l, "Features for") {
			names = append(names, name)
		}
	}
	return names
}

// randomKeys returns the features and channels keys of one random mix.
func randomKeys(rng *rand.Rand, pool []string) string {
	var parts []string
	seen := map[string]bool{}
	for range 1 + rng.IntN(4) {
		name := pool[rng.IntN(len(pool))]
		if !seen[name] {
			seen[name] = true
			parts = append(parts, fmt.Sprintf("%q:%t", name, rng.IntN(2) == 0))
		}
	}
	keys := `"features":{` + strings.Join(parts, ",") + `}`
	var counts []string
	for _, k := range []string{"rx", "tx", "combined"} {
		if rng.IntN(3) == 0 {
			counts = append(counts, fmt.Sprintf("%q:%d", k, rng.IntN(6)))
		}
	}
	return keys + `,"channels":{` + strings.Join(counts, ",") + `}`
}
