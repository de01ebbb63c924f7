package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/sysctl"
	"cnisuite/plugins/meta/tuning/backup"
	"cnisuite/test/sandbox"
)

// testVersions are the configuration versions the privileged tests cover.
var testVersions = []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"}

const (
	testIfName  = "eth0"
	testSysctl  = "net.ipv4.conf.IFNAME.arp_ignore"
	testSysPath = "net/ipv4/conf/eth0/arp_ignore"
	testMAC     = "02:42:AC:11:00:2A" // upper case on purpose: CHECK must not care
)

// container is what a test sees of a container's interface.
type container struct {
	t     testing.TB
	netns *ns.NetNS
}

// snapshot returns the container interface's attributes and test sysctl.
func (c container) snapshot() (linkops.Attrs, string) {
	c.t.Helper()
	var attrs linkops.Attrs
	var value string
	err := c.netns.Do(func() error {
		var err error
		if attrs, err = (linkops.Netlink{}).Get(testIfName); err != nil {
			return err
		}
		value, err = sysctl.Default.Get(testSysPath)
		return err
	})
	if err != nil {
		c.t.Fatalf("reading container interface: %v", err)
	}
	return attrs, value
}

// do runs fn inside the container or fails the test.
func (c container) do(what string, fn func() error) {
	c.t.Helper()
	if err := c.netns.Do(fn); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// newVethContainer makes a container namespace holding eth0, the peer of a
// host-side veth in the test's own (sandbox) namespace.
func newVethContainer(t testing.TB, hostName string) container {
	return newQueuesContainer(t, hostName, 0)
}

// newQueuesContainer is newVethContainer with the given number of queues
// each way on both ends (0: the kernel's default), so that channel counts
// have room to change.
func newQueuesContainer(t testing.TB, hostName string, queues uint32) container {
	t.Helper()
	netns := sandbox.NewNS(t)
	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: hostName, NumTxQueues: int(queues), NumRxQueues: int(queues)},
		PeerName:        testIfName,
		PeerNamespace:   netlink.NsFd(int(netns.Fd())),
		PeerNumTxQueues: queues, PeerNumRxQueues: queues,
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add %s numtxqueues %d numrxqueues %d type veth peer %s (same queues): %v", hostName, queues, queues, testIfName, err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(veth); err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) {
			t.Logf("deleting %s: %v", hostName, err)
		}
	})
	return container{t: t, netns: netns}
}

// prevResultJSON is what a main plugin would have returned for eth0.
func prevResultJSON(version, sandboxPath string, mac net.HardwareAddr) string {
	ip := `{"address":"10.99.0.2/24","interface":0}`
	if strings.HasPrefix(version, "0.") {
		ip = `{"version":"4","address":"10.99.0.2/24","interface":0}`
	}
	return fmt.Sprintf(`{"cniVersion":%q,"interfaces":[{"name":%q,"mac":%q,"sandbox":%q}],"ips":[%s]}`,
		version, testIfName, mac, sandboxPath, ip)
}

// tuningConf is a tuning configuration setting every attribute and one
// per-interface sysctl.
func tuningConf(version, dataDir, extra string) string {
	return fmt.Sprintf(`{"cniVersion":%q,"name":"tunenet","type":"tuning","dataDir":%q,
		"capabilities":{"mac":true},
		"sysctl":{%q:"1"},"mtu":1400,"promisc":true,"allmulti":true,"txQLen":42%s}`,
		version, dataDir, testSysctl, extra)
}

// wantTuned checks the interface carries every tuned value.
func wantTuned(t *testing.T, c container) {
	t.Helper()
	attrs, value := c.snapshot()
	if !strings.EqualFold(attrs.MAC.String(), testMAC) || attrs.MTU != 1400 || !attrs.Promisc ||
		!attrs.Allmulti || attrs.TxQLen != 42 || value != "1" {
		t.Errorf("after ADD: mac %s mtu %d promisc %v allmulti %v txqlen %d %s=%s; want %s 1400 true true 42 1",
			attrs.MAC, attrs.MTU, attrs.Promisc, attrs.Allmulti, attrs.TxQLen, testSysPath, value, testMAC)
	}
}

// wantRestored checks the interface is back to before.
func wantRestored(t *testing.T, c container, before linkops.Attrs, beforeValue string) {
	t.Helper()
	attrs, value := c.snapshot()
	if attrs.MAC.String() != before.MAC.String() || attrs.MTU != before.MTU || attrs.Promisc != before.Promisc ||
		attrs.Allmulti != before.Allmulti || attrs.TxQLen != before.TxQLen || value != beforeValue {
		t.Errorf("after DEL: %+v %s=%s; want %+v %s", attrs, testSysPath, value, before, beforeValue)
	}
}

// wantResultMAC checks the result names eth0 with the new MAC, and with
// the new MTU at 1.1.0 (the first version with an interface mtu).
func wantResultMAC(t *testing.T, res cnitypes.Result, version string) {
	t.Helper()
	if res.Version() != version {
		t.Errorf("result version %q, want %q", res.Version(), version)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		t.Fatalf("converting result: %v", err)
	}
	for _, i := range r.Interfaces {
		if i.Name == testIfName && i.Sandbox != "" {
			if !strings.EqualFold(i.Mac, testMAC) {
				t.Errorf("result mac of %s = %q, want %q", testIfName, i.Mac, testMAC)
			}
			if wantMTU := map[bool]int{true: 1400}[version == "1.1.0"]; i.Mtu != wantMTU {
				t.Errorf("result mtu of %s at %s = %d, want %d", testIfName, version, i.Mtu, wantMTU)
			}
			return
		}
	}
	t.Errorf("result has no container interface %s: %+v", testIfName, r.Interfaces)
}

func wantNoStateFile(t *testing.T, dataDir, id string) {
	t.Helper()
	p := filepath.Join(dataDir, backup.FileName(id, testIfName))
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file %s after DEL: %v, want it gone", p, err)
	}
}

func wantStateFile(t *testing.T, dataDir, id string) {
	t.Helper()
	p := filepath.Join(dataDir, backup.FileName(id, testIfName))
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file %s after ADD: %v, %v; want mode 0600", p, fi, err)
	}
}

// pluginConf parses a single plugin configuration the way a runtime does.
func pluginConf(t testing.TB, data string) *libcni.PluginConfig {
	t.Helper()
	conf, err := libcni.NetworkPluginConfFromBytes([]byte(data))
	if err != nil {
		t.Fatalf("parsing %s: %v", data, err)
	}
	return conf
}

var ctx = context.Background()
