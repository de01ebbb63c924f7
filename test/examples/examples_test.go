// Package examples loads every example network configuration of the
// repository and drives it through the runtime library, as a node would.
package examples

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/version"
	"cnisuite/test/sandbox"
)

func TestExamples(t *testing.T) {
	sandbox.Require(t)
	files, err := filepath.Glob("../../examples/*.conflist")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example conflists found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			list := sandbox.ConfList(t, string(data))
			exercise(t, list)
		})
	}
}

// exercise runs ADD, CHECK, STATUS, GC and DEL for one container, with a
// throwaway namespace standing in for the node so examples that share a
// bridge name or a host port never meet.
func exercise(t *testing.T, list *libcni.NetworkConfigList) {
	node, ctr := sandbox.NewNS(t), sandbox.NewNS(t)
	rt := sandbox.Runtime(t)
	ifName := "eth0"
	if list.Name == "loopback" {
		ifName = "lo"
	}
	conf := &libcni.RuntimeConf{ContainerID: "example-" + list.Name, NetNS: ctr.Path(), IfName: ifName,
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{
			{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}}}}
	ctx := context.Background()
	err := node.Do(func() error {
		if _, err := rt.AddNetworkList(ctx, list, conf); err != nil {
			return fmt.Errorf("ADD: %w", err)
		}
		checkAddressed(t, ctr, list, ifName)
		if err := rt.CheckNetworkList(ctx, list, conf); err != nil {
			t.Errorf("CHECK: %v", err)
		}
		if version.AtLeast(list.CNIVersion, version.MinGC) {
			if err := rt.GetStatusNetworkList(ctx, list); err != nil {
				t.Errorf("STATUS: %v", err)
			}
			keep := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: conf.ContainerID, IfName: ifName}}}
			if err := rt.GCNetworkList(ctx, list, keep); err != nil {
				t.Errorf("GC: %v", err)
			}
			checkAddressed(t, ctr, list, ifName) // GC kept the valid attachment
		}
		if err := rt.DelNetworkList(ctx, list, conf); err != nil {
			t.Errorf("DEL: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkGone(t, ctr, list, ifName)
}

func checkAddressed(t *testing.T, ctr *ns.NetNS, list *libcni.NetworkConfigList, ifName string) {
	t.Helper()
	err := ctr.Do(func() error {
		link, err := netlink.LinkByName(ifName)
		if err != nil {
			return err
		}
		if link.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s is down after ADD", ifName)
		}
		addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		layer2 := strings.Contains(string(list.Bytes), `"ipam": {}`)
		if layer2 != (len(addrs) == 0) {
			t.Errorf("%s has IPv4 addresses %v; layer-2 only: %v", ifName, addrs, layer2)
		}
		return nil
	})
	if err != nil {
		t.Errorf("inspecting the container: %v", err)
	}
}

func checkGone(t *testing.T, ctr *ns.NetNS, list *libcni.NetworkConfigList, ifName string) {
	t.Helper()
	if ifName == "lo" {
		return
	}
	err := ctr.Do(func() error {
		if _, err := netlink.LinkByName(ifName); err == nil {
			t.Errorf("%s still exists after DEL", ifName)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	leases, _ := filepath.Glob(filepath.Join("/var/lib/cni/networks", list.Name, "*"))
	for _, l := range leases {
		base := filepath.Base(l)
		if base != "lock" && !strings.HasPrefix(base, "last_reserved_ip") && !strings.HasPrefix(base, ".") {
			t.Errorf("lease %s left after DEL", l)
		}
	}
}
