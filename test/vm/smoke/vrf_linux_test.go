package smoke

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/vishvananda/netlink"

	"cnisuite/test/sandbox"
)

// vrfConf chains the reference's vrf after our bridge: %[1]s is the
// bridge, %[2]s the lease directory.
const vrfConf = `{"cniVersion":"1.0.0","name":"vrfnet","plugins":[
  {"type":"bridge","bridge":%[1]q,"isGateway":true,
   "ipam":{"type":"host-local","dataDir":%[2]q,"ranges":[[{"subnet":"10.98.0.0/24"}]]}},
  {"type":"vrf","vrfname":"blue","table":1001}]}`

// TestVRFChained: the reference's vrf (Debian 12's build and the pinned
// release, which test/vm/run.sh puts in ref-debian/ and ref-v1.9.1/ of
// the plugin directory) chained after our bridge enslaves the pod's eth0
// to VRF blue, whose table 1001 holds the pod's subnet route; the pod
// reaches its gateway through the VRF; CHECK passes; DEL leaves no port on
// the bridge and no lease. This machine kind's kernel has no VRF: the test
// runs in make vmtest, and skips (saying so) on a kernel without it
// outside the VM.
func TestVRFChained(t *testing.T) {
	sandbox.Require(t)
	requireVRF(t)
	for i, ref := range []string{"ref-debian", "ref-v1.9.1"} {
		t.Run(ref, func(t *testing.T) {
			dir := filepath.Join(os.Getenv("CNISUITE_BIN"), ref)
			if _, err := os.Stat(filepath.Join(dir, "vrf")); err != nil {
				t.Fatalf("the reference's vrf (test/vm/run.sh puts it in %s): %v", dir, err)
			}
			br, leases := fmt.Sprintf("vrfbr%d", i), t.TempDir()
			sandbox.RemoveLinkAtEnd(t, br)
			rt := libcni.NewCNIConfigWithCacheDir([]string{dir, os.Getenv("CNISUITE_BIN")}, t.TempDir(), nil)
			list := sandbox.ConfList(t, fmt.Sprintf(vrfConf, br, leases))
			pod := sandbox.NewNS(t)
			rc := &libcni.RuntimeConf{ContainerID: "vrf-pod", IfName: "eth0", NetNS: pod.Path()}
			if _, err := rt.AddNetworkList(context.Background(), list, rc); err != nil {
				t.Fatalf("ADD: %v", err)
			}
			t.Cleanup(func() { _ = rt.DelNetworkList(context.Background(), list, rc) }) // after a failure only
			inPod := func(args ...string) string {
				out, err := exec.Command("nsenter", append([]string{"--net=" + pod.Path(), "--"}, args...)...).CombinedOutput()
				if err != nil {
					t.Errorf("%s in the pod: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			if out := inPod("ip", "-o", "link", "show", "eth0"); !strings.Contains(out, "master blue") {
				t.Errorf("eth0 in the pod: %s, want it enslaved to VRF blue", out)
			}
			if out := inPod("ip", "route", "show", "table", "1001"); !strings.Contains(out, "10.98.0.0/24") {
				t.Errorf("table 1001 of the pod:\n%s\nwant the subnet route the vrf plugin moved there", out)
			}
			inPod("ping", "-c", "1", "-W", "5", "-I", "blue", "10.98.0.1")
			if err := rt.CheckNetworkList(context.Background(), list, rc); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			if err := rt.DelNetworkList(context.Background(), list, rc); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			wantNoPorts(t, br)
			if entries, _ := os.ReadDir(filepath.Join(leases, "vrfnet")); len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				if strings.Contains(strings.Join(names, " "), "10.98.0.") {
					t.Errorf("lease left after DEL: %v", names)
				}
			}
		})
	}
}

// requireVRF skips the test on a kernel that cannot make a VRF device,
// unless it runs in the VM (CNISUITE_VM=1), whose kernel must.
func requireVRF(t *testing.T) {
	t.Helper()
	n := sandbox.NewNS(t)
	err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Vrf{LinkAttrs: netlink.LinkAttrs{Name: "vrfprobe"}, Table: 10})
	})
	if err == nil {
		return
	}
	if os.Getenv("CNISUITE_VM") == "1" {
		t.Fatalf("the VM's kernel made no VRF device: %v", err)
	}
	t.Skipf("this kernel makes no VRF device (%v): the test runs in make vmtest, on Debian 12's kernel", err)
}

// wantNoPorts fails the test if the bridge has a port.
func wantNoPorts(t *testing.T, name string) {
	t.Helper()
	br, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("bridge %s: %v", name, err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			t.Errorf("port %s left on %s after DEL", l.Attrs().Name, name)
		}
	}
}
