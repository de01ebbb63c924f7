package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/sysctl"
	"cnisuite/pkg/version"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/test/sandbox"
)

func versionID(prefix, v string) string {
	return prefix + "-" + strings.ReplaceAll(v, ".", "-")
}

// vethTuning is tuning chained after a hand-made veth at one cniVersion:
// the container and its state before, the prevResult key a configuration
// carries, the attachment and the runtime.
type vethTuning struct {
	c           container
	before      linkops.Attrs
	beforeValue string
	prev        string // ,"prevResult":{…}, to close a configuration with
	rt          *libcni.RuntimeConf
	cni         *libcni.CNIConfig
}

// newVethTuning makes the container (host end hostName) and the
// attachment of container ID id.
func newVethTuning(t *testing.T, v, hostName, id string) *vethTuning {
	t.Helper()
	c := newVethContainer(t, hostName)
	vt := &vethTuning{c: c, cni: sandbox.Runtime(t),
		rt: &libcni.RuntimeConf{ContainerID: id, NetNS: c.netns.Path(), IfName: testIfName}}
	vt.before, vt.beforeValue = c.snapshot()
	vt.prev = `,"prevResult":` + prevResultJSON(v, c.netns.Path(), vt.before.MAC)
	return vt
}

// add runs ADD of conf, failing the test if it fails.
func (vt *vethTuning) add(t *testing.T, conf *libcni.PluginConfig) cnitypes.Result {
	t.Helper()
	res, err := vt.cni.AddNetwork(ctx, conf, vt.rt)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	return res
}

// TestAfterVeth chains tuning after a hand-made veth, its prevResult in
// the configuration, through libcni: ADD, CHECK, drift, DEL.
func TestAfterVeth(t *testing.T) {
	sandbox.Require(t)
	for i, v := range testVersions {
		t.Run(v, func(t *testing.T) {
			vt := newVethTuning(t, v, fmt.Sprintf("tuh%d", i), versionID("veth", v))
			c, rt, cni := vt.c, vt.rt, vt.cni
			rt.CapabilityArgs = map[string]any{"mac": testMAC}
			dataDir := filepath.Join(t.TempDir(), "tuning")
			conf := pluginConf(t, tuningConf(v, dataDir, vt.prev))
			res := vt.add(t, conf)
			wantResultMAC(t, res, v)
			wantTuned(t, c)
			wantStateFile(t, dataDir, rt.ContainerID)
			if version.AtLeast(v, "0.4.0") {
				checkDrift(t, c, func() error { return cni.CheckNetwork(ctx, conf, rt) })
			}
			if err := cni.DelNetwork(ctx, conf, rt); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			wantRestored(t, c, vt.before, vt.beforeValue)
			wantNoStateFile(t, dataDir, rt.ContainerID)
			if err := cni.DelNetwork(ctx, conf, rt); err != nil {
				t.Errorf("second DEL: %v, want success", err)
			}
		})
	}
}

// checkDrift runs CHECK on a tuned interface, then again after each of a
// link attribute and the sysctl is changed behind the plugin's back.
func checkDrift(t *testing.T, c container, check func() error) {
	t.Helper()
	if err := check(); err != nil {
		t.Fatalf("CHECK after ADD: %v", err)
	}
	drifts := []struct {
		name, wantText  string
		change, putBack func() error
	}{
		{"mtu", `mtu of "eth0" is 1300, want 1400`,
			func() error { return setMTUByName(1300) }, func() error { return setMTUByName(1400) }},
		{"sysctl", `sysctl "net/ipv4/conf/eth0/arp_ignore" is "2", want "1"`,
			func() error { return sysctl.Set(testSysPath, "2") }, func() error { return sysctl.Set(testSysPath, "1") }},
		{"promisc", `promisc of "eth0" is false, want true`,
			func() error { return setPromiscByName(false) }, func() error { return setPromiscByName(true) }},
	}
	for _, d := range drifts {
		c.do("changing "+d.name, d.change)
		err := check()
		// Chained after bridge, bridge's CHECK (first in the chain) may
		// name the MTU drift in its own words.
		bridgeText := strings.Replace(strings.Replace(d.wantText, `mtu of "eth0" is `, "MTU ", 1), ", want ", ", prevResult says ", 1)
		if err == nil || !strings.Contains(err.Error(), d.wantText) && !(d.name == "mtu" && strings.Contains(err.Error(), bridgeText)) {
			t.Errorf("CHECK after %s changed = %v, want an error containing %q", d.name, err, d.wantText)
		}
		c.do("putting back "+d.name, d.putBack)
	}
	if err := check(); err != nil {
		t.Errorf("CHECK after putting everything back: %v", err)
	}
}

func setMTUByName(mtu int) error {
	l, err := netlink.LinkByName(testIfName)
	if err != nil {
		return err
	}
	return netlink.LinkSetMTU(l, mtu)
}

func setPromiscByName(on bool) error {
	l, err := (linkops.Netlink{}).Get(testIfName)
	if err != nil {
		return err
	}
	return (linkops.Netlink{}).SetPromisc(l, on)
}

// TestDelNetnsGone deletes the container namespace before DEL.
func TestDelNetnsGone(t *testing.T) {
	sandbox.Require(t)
	for i, v := range testVersions {
		t.Run(v, func(t *testing.T) {
			vt := newVethTuning(t, v, fmt.Sprintf("tug%d", i), versionID("gone", v))
			dataDir := t.TempDir()
			conf := pluginConf(t, tuningConf(v, dataDir, vt.prev))
			vt.add(t, conf)
			wantStateFile(t, dataDir, vt.rt.ContainerID)
			if err := sandbox.RemoveNS(vt.c.netns.Path()); err != nil {
				t.Fatalf("removing the container namespace: %v", err)
			}
			if err := vt.cni.DelNetwork(ctx, conf, vt.rt); err != nil {
				t.Fatalf("DEL with the netns gone: %v, want success", err)
			}
			wantNoStateFile(t, dataDir, vt.rt.ContainerID)
		})
	}
}

// TestAddErrors covers ADD refusals a user meets: no prevResult, a key
// outside the allow-list; neither may leave a change or a state file.
func TestAddErrors(t *testing.T) {
	sandbox.Require(t)
	const v = "1.0.0"
	allow := filepath.Dir(DefaultAllowListPath)
	if err := os.MkdirAll(allow, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DefaultAllowListPath, []byte(`net\.ipv4\.conf\.IFNAME\.arp_ignore`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(DefaultAllowListPath) })
	vt := newVethTuning(t, v, "tue0", "err")
	prev := vt.prev
	tests := []struct {
		name, extra, wantText string
	}{
		{"no prevResult", ``, `required prevResult missing`},
		{"sysctl outside the allow-list", `,"args":{"cni":{"sysctl":{"net.core.somaxconn":"512"}}}` + prev,
			`sysctl "net.core.somaxconn" is not allowed`},
		{"unknown sysctl", `,"args":{"cni":{"sysctl":{"net.ipv4.conf.IFNAME.nosuch":"1"}}}` + prev, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			conf := pluginConf(t, tuningConf(v, dataDir, tc.extra))
			_, err := vt.cni.AddNetwork(ctx, conf, vt.rt)
			var ce *cnitypes.Error
			if !errors.As(err, &ce) || ce.Code != 7 || !strings.Contains(ce.Msg, tc.wantText) {
				t.Fatalf("ADD = %v, want code 7 containing %q", err, tc.wantText)
			}
			wantRestored(t, vt.c, vt.before, vt.beforeValue)
			wantNoStateFile(t, dataDir, vt.rt.ContainerID)
		})
	}
}

// TestGCAndStatus runs the spec 1.1 verbs through libcni: GC removes the
// state of this network's stale attachments only; STATUS succeeds.
func TestGCAndStatus(t *testing.T) {
	sandbox.Require(t)
	const v = "1.1.0"
	vt := newVethTuning(t, v, "tuc0", "live")
	rt, cni := vt.rt, vt.cni
	dataDir := t.TempDir()
	list := sandbox.ConfList(t, `{"cniVersion":"1.1.0","name":"tunenet","plugins":[`+tuningConf(v, dataDir, vt.prev)+`]}`)
	if _, err := cni.AddNetworkList(ctx, list, rt); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	t.Cleanup(func() {
		if err := cni.DelNetworkList(ctx, list, rt); err != nil {
			t.Errorf("DEL: %v", err)
		}
	})
	store := backup.Store{Dir: dataDir}
	for _, f := range []struct{ id, network string }{{"stale", "tunenet"}, {"othernet", "other"}} {
		if err := store.Save(f.id, testIfName, &backup.State{Network: f.network, MTU: 1500}); err != nil {
			t.Fatal(err)
		}
	}
	valid := []cnitypes.GCAttachment{{ContainerID: "live", IfName: testIfName}}
	if err := cni.GCNetworkList(ctx, list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	want := []string{"live_eth0.json", "othernet_eth0.json"}
	if got := listDir(t, dataDir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("state files after GC: %v, want %v", got, want)
	}
	if err := cni.GetStatusNetworkList(ctx, list); err != nil {
		t.Errorf("STATUS: %v, want success", err)
	}
}

// bridgeChain is a bridge + host-local + tuning conflist and its runtime.
type bridgeChain struct {
	list    *libcni.NetworkConfigList
	tuning  string // the tuning plugin's configuration
	dataDir string // tuning's
	rt      *libcni.RuntimeConf
	cni     *libcni.CNIConfig
}

// newBridgeChain skips the test when bridge or host-local is not built.
func newBridgeChain(t *testing.T, v string, i int, c container) *bridgeChain {
	t.Helper()
	bin := sandbox.Bin(t)
	for _, p := range []string{"bridge", "host-local", "tuning"} {
		if _, err := os.Stat(filepath.Join(bin, p)); err != nil {
			t.Skipf("plugin %s is not built (%v): bridge+host-local chain not testable yet", p, err)
		}
	}
	bc := &bridgeChain{dataDir: filepath.Join(t.TempDir(), "tuning"), cni: sandbox.Runtime(t)}
	bc.tuning = tuningConf(v, bc.dataDir, `,"mac":"`+testMAC+`"`)
	bc.list = sandbox.ConfList(t, fmt.Sprintf(`{"cniVersion":%q,"name":"tunebr","plugins":[
		{"type":"bridge","bridge":"tubr%d","isGateway":true,
		 "ipam":{"type":"host-local","subnet":"10.98.%d.0/24","dataDir":%q}},
		%s]}`, v, i, i, t.TempDir(), bc.tuning))
	bc.rt = &libcni.RuntimeConf{ContainerID: versionID(fmt.Sprintf("br%d", i), v), NetNS: c.netns.Path(), IfName: testIfName}
	sandbox.RemoveLinkAtEnd(t, fmt.Sprintf("tubr%d", i))
	return bc
}

// TestAfterBridge chains tuning after bridge and host-local, as a node runs
// it, through libcni.
func TestAfterBridge(t *testing.T) {
	sandbox.Require(t)
	for i, v := range testVersions {
		t.Run(v, func(t *testing.T) {
			c := container{t: t, netns: sandbox.NewNS(t)}
			bc := newBridgeChain(t, v, i, c)
			res, err := bc.cni.AddNetworkList(ctx, bc.list, bc.rt)
			if err != nil {
				t.Fatalf("ADD bridge+host-local+tuning: %v", err)
			}
			t.Cleanup(func() {
				if err := bc.cni.DelNetworkList(ctx, bc.list, bc.rt); err != nil {
					t.Errorf("DEL bridge+host-local+tuning: %v", err)
				}
				wantNoStateFile(t, bc.dataDir, bc.rt.ContainerID)
			})
			wantResultMAC(t, res, v)
			wantTuned(t, c)
			wantStateFile(t, bc.dataDir, bc.rt.ContainerID)
			if version.AtLeast(v, "0.4.0") {
				checkDrift(t, c, func() error { return bc.cni.CheckNetworkList(ctx, bc.list, bc.rt) })
			}
			// tuning runs first on DEL: run it alone to see what it puts
			// back before bridge deletes the interface.
			tuningOnly := pluginConf(t, strings.Replace(bc.tuning, `"name":"tunenet"`, `"name":"tunebr"`, 1))
			if err := bc.cni.DelNetwork(ctx, tuningOnly, bc.rt); err != nil {
				t.Fatalf("DEL of tuning: %v", err)
			}
			attrs, value := c.snapshot()
			if strings.EqualFold(attrs.MAC.String(), testMAC) || attrs.MTU != 1500 || attrs.Promisc || attrs.Allmulti || value != "0" {
				t.Errorf("after DEL: %+v %s=%s; want the bridge's MAC, mtu 1500, promisc and allmulti off, 0", attrs, testSysPath, value)
			}
		})
	}
}

// TestAfterBridgeNetnsGone deletes the container namespace, then runs DEL
// of the whole chain.
func TestAfterBridgeNetnsGone(t *testing.T) {
	sandbox.Require(t)
	for i, v := range testVersions {
		t.Run(v, func(t *testing.T) {
			c := container{t: t, netns: sandbox.NewNS(t)}
			bc := newBridgeChain(t, v, 10+i, c)
			if _, err := bc.cni.AddNetworkList(ctx, bc.list, bc.rt); err != nil {
				t.Fatalf("ADD bridge+host-local+tuning: %v", err)
			}
			wantStateFile(t, bc.dataDir, bc.rt.ContainerID)
			if err := sandbox.RemoveNS(c.netns.Path()); err != nil {
				t.Fatalf("removing the container namespace: %v", err)
			}
			if err := bc.cni.DelNetworkList(ctx, bc.list, bc.rt); err != nil {
				t.Fatalf("DEL with the netns gone: %v, want success", err)
			}
			wantNoStateFile(t, bc.dataDir, bc.rt.ContainerID)
		})
	}
}

// TestPassThrough runs tuning with nothing to tune: the result is the
// prevResult, nothing is written, DEL succeeds.
func TestPassThrough(t *testing.T) {
	sandbox.Require(t)
	for i, v := range testVersions {
		t.Run(v, func(t *testing.T) {
			vt := newVethTuning(t, v, fmt.Sprintf("tup%d", i), versionID("pass", v))
			dataDir := t.TempDir()
			conf := pluginConf(t, fmt.Sprintf(`{"cniVersion":%q,"name":"tunenet","type":"tuning","dataDir":%q%s}`, v, dataDir, vt.prev))
			r, err := types100.NewResultFromResult(vt.add(t, conf))
			if err != nil || len(r.Interfaces) != 1 || r.Interfaces[0].Mac != vt.before.MAC.String() || len(r.IPs) != 1 ||
				r.IPs[0].Address.String() != "10.99.0.2/24" {
				t.Errorf("ADD result = %+v, %v; want the prevResult unchanged", r, err)
			}
			if got := listDir(t, dataDir); len(got) != 0 {
				t.Errorf("state files after a no-op ADD: %v, want none", got)
			}
			wantRestored(t, vt.c, vt.before, vt.beforeValue)
			if err := vt.cni.DelNetwork(ctx, conf, vt.rt); err != nil {
				t.Errorf("DEL: %v", err)
			}
		})
	}
}
