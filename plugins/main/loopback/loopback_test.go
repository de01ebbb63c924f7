package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/pkg/version"
	"cnisuite/test/sandbox"
)

func loUp(t *testing.T, n *ns.NetNS) bool {
	t.Helper()
	var up bool
	err := n.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		up = lo.Attrs().Flags&net.FlagUp != 0
		return nil
	})
	if err != nil {
		t.Fatalf("reading lo: %v", err)
	}
	return up
}

func TestLoopbackThroughLibcni(t *testing.T) {
	sandbox.Require(t)
	for _, v := range version.All {
		t.Run(v, func(t *testing.T) {
			n := sandbox.NewNS(t)
			rt := sandbox.Runtime(t)
			list := sandbox.ConfList(t, fmt.Sprintf(
				`{"cniVersion":%q,"name":"lonet","plugins":[{"type":"loopback"}]}`, v))
			conf := &libcni.RuntimeConf{ContainerID: "lo-" + strings.ReplaceAll(v, ".", ""), NetNS: n.Path(), IfName: "lo"}
			ctx := context.Background()

			res, err := rt.AddNetworkList(ctx, list, conf)
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			if !loUp(t, n) {
				t.Fatal("after ADD, lo is down")
			}
			checkLoResult(t, v, res)
			checkVerbs(t, rt, list, conf)
			if err := rt.DelNetworkList(ctx, list, conf); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if loUp(t, n) {
				t.Fatal("after DEL, lo is up")
			}
			if err := rt.DelNetworkList(ctx, list, conf); err != nil {
				t.Fatalf("second DEL: %v", err)
			}
		})
	}
}

func checkLoResult(t *testing.T, v string, res cnitypes.Result) {
	t.Helper()
	if res.Version() != v {
		t.Errorf("result version = %q, want %q", res.Version(), v)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("encoding result: %v", err)
	}
	out := string(data)
	if !strings.Contains(out, `"127.0.0.1/8"`) {
		t.Errorf("result %s lacks 127.0.0.1", out)
	}
}

func checkVerbs(t *testing.T, rt *libcni.CNIConfig, list *libcni.NetworkConfigList, conf *libcni.RuntimeConf) {
	t.Helper()
	ctx, v := context.Background(), list.CNIVersion
	if version.AtLeast(v, version.MinCheck) {
		if err := rt.CheckNetworkList(ctx, list, conf); err != nil {
			t.Errorf("CHECK: %v", err)
		}
	}
	if version.AtLeast(v, version.MinGC) {
		if err := rt.GetStatusNetworkList(ctx, list); err != nil {
			t.Errorf("STATUS: %v", err)
		}
		gc := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: conf.ContainerID, IfName: "lo"}}}
		if err := rt.GCNetworkList(ctx, list, gc); err != nil {
			t.Errorf("GC: %v", err)
		}
	}
}

func TestLoopbackDelWithoutNetns(t *testing.T) {
	sandbox.Require(t)
	n := sandbox.NewNS(t)
	rt := sandbox.Runtime(t)
	list := sandbox.ConfList(t, `{"cniVersion":"1.1.0","name":"lonet","plugins":[{"type":"loopback"}]}`)
	conf := &libcni.RuntimeConf{ContainerID: "gone", NetNS: n.Path(), IfName: "lo"}
	ctx := context.Background()
	if _, err := rt.AddNetworkList(ctx, list, conf); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if err := sandbox.RemoveNS(n.Path()); err != nil {
		t.Fatal(err)
	}
	if err := rt.DelNetworkList(ctx, list, conf); err != nil {
		t.Fatalf("DEL after the netns is gone: %v", err)
	}
	if err := rt.CheckNetworkList(ctx, list, conf); err == nil {
		t.Fatal("CHECK after the netns is gone succeeded; want an error")
	}
}

func TestLoopbackCheckFailsWhenDown(t *testing.T) {
	sandbox.Require(t)
	n := sandbox.NewNS(t)
	rt := sandbox.Runtime(t)
	list := sandbox.ConfList(t, `{"cniVersion":"1.0.0","name":"lonet","plugins":[{"type":"loopback"}]}`)
	conf := &libcni.RuntimeConf{ContainerID: "down", NetNS: n.Path(), IfName: "lo"}
	ctx := context.Background()
	if _, err := rt.AddNetworkList(ctx, list, conf); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	err := n.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(lo)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.CheckNetworkList(ctx, list, conf); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("CHECK with lo down = %v, want an error saying it is down", err)
	}
}
