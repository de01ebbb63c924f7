package hostlocal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"cnisuite/test/sandbox"
)

// These tests drive the built binary through libcni, as a runtime would,
// inside scripts/sandbox.sh (libcni wants a network namespace path).

func libcniList(t *testing.T, version, dataDir, ipam string) *libcni.NetworkConfigList {
	t.Helper()
	return sandbox.ConfList(t, fmt.Sprintf(`{"cniVersion":%q,"name":"testnet","plugins":[
		{"type":"host-local","ipam":{"type":"host-local","dataDir":%q,%s}}]}`, version, dataDir, ipam))
}

func rt(netns, id string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: netns, IfName: "eth0"}
}

func TestLibcniParallelAddDel(t *testing.T) {
	sandbox.Require(t)
	netns := sandbox.NewNS(t).Path()
	cni := sandbox.Runtime(t)
	dataDir := t.TempDir()
	list := libcniList(t, "1.1.0", dataDir, dualStack)
	const n = 100
	addrs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cni.AddNetworkList(context.Background(), list, rt(netns, fmt.Sprintf("c%03d", i)))
			if err != nil {
				errs[i] = err
				return
			}
			r, err := types100.GetResult(res)
			if err != nil || len(r.IPs) != 2 {
				errs[i] = fmt.Errorf("result %v: %v", res, err)
				return
			}
			addrs[i] = r.IPs[0].Address.String() + " " + r.IPs[1].Address.String()
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("ADD c%03d: %v", i, errs[i])
			continue
		}
		for _, a := range strings.Fields(addrs[i]) {
			if j, dup := seen[a]; dup {
				t.Errorf("ADD c%03d and c%03d both got %s", i, j, a)
			}
			seen[a] = i
		}
	}
	if len(seen) != 2*n {
		t.Errorf("%d parallel dual-stack ADDs gave %d distinct addresses, want %d", n, len(seen), 2*n)
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cni.DelNetworkList(context.Background(), list, rt(netns, fmt.Sprintf("c%03d", i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("DEL c%03d: %v", i, err)
		}
	}
	assertOnlyState(t, dataDir)
}

// assertOnlyState fails unless the network directory holds nothing but lock
// and last_reserved_ip.* files.
func assertOnlyState(t *testing.T, dataDir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "testnet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip.") {
			t.Errorf("lease directory still holds %s", e.Name())
		}
	}
}

func TestLibcniGC(t *testing.T) {
	sandbox.Require(t)
	netns := sandbox.NewNS(t).Path()
	dataDir := t.TempDir()
	list := libcniList(t, "1.1.0", dataDir, dualStack)
	adder := sandbox.Runtime(t)
	for _, id := range []string{"keep", "gone1", "gone2"} {
		if _, err := adder.AddNetworkList(context.Background(), list, rt(netns, id)); err != nil {
			t.Fatalf("ADD %s: %v", id, err)
		}
	}
	// A runtime that lost its cache (a node reboot): only the GC verb can free the leases.
	gc := sandbox.Runtime(t)
	valid := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: "keep", IfName: "eth0"}}}
	if err := gc.GCNetworkList(context.Background(), list, valid); err != nil {
		t.Fatalf("GC: %v", err)
	}
	want := `10.1.2.2=keep\r\neth0 2001:db8::2=keep\r\neth0 last_reserved_ip.0=10.1.2.4 last_reserved_ip.1=2001:db8::4 lock=`
	if got := files(t, dataDir); got != want {
		t.Errorf("after GC:\n%s\nwant\n%s", got, want)
	}
	if err := gc.GCNetworkList(context.Background(), list, &libcni.GCArgs{}); err != nil {
		t.Fatalf("GC with no valid attachment: %v", err)
	}
	assertOnlyState(t, dataDir)
	if err := gc.GetStatusNetworkList(context.Background(), list); err != nil {
		t.Errorf("STATUS: %v", err)
	}
}

func TestLibcniEveryVersion(t *testing.T) {
	sandbox.Require(t)
	netns := sandbox.NewNS(t).Path()
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			cni := sandbox.Runtime(t)
			dataDir := t.TempDir()
			ipam := dualStack
			list := libcniList(t, v, dataDir, ipam)
			res, err := cni.AddNetworkList(context.Background(), list, rt(netns, "c1"))
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			if res.Version() != v {
				t.Errorf("result version = %s, want %s", res.Version(), v)
			}
			r, err := types100.GetResult(res)
			if err != nil {
				t.Fatalf("converting the %s result: %v", v, err)
			}
			var got []string
			for _, ip := range r.IPs {
				got = append(got, ip.Address.String()+" gw "+ip.Gateway.String())
			}
			if want := "10.1.2.2/24 gw 10.1.2.1,2001:db8::2/64 gw 2001:db8::1"; strings.Join(got, ",") != want {
				t.Errorf("ADD at %s = %v, want %s", v, got, want)
			}
			if len(r.Interfaces) != 0 {
				t.Errorf("ADD at %s names interfaces %v", v, r.Interfaces)
			}
			if v >= "0.4.0" {
				if err := cni.CheckNetworkList(context.Background(), list, rt(netns, "c1")); err != nil {
					t.Errorf("CHECK: %v", err)
				}
			}
			if err := cni.DelNetworkList(context.Background(), list, rt(netns, "c1")); err != nil {
				t.Errorf("DEL: %v", err)
			}
			assertOnlyState(t, dataDir)
		})
	}
}
