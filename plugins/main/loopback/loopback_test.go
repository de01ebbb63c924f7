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

// loNet is the loopback network at one cniVersion, a fresh netns and the
// runtime that attaches it as one container.
type loNet struct {
	ns   *ns.NetNS
	rt   *libcni.CNIConfig
	list *libcni.NetworkConfigList
	conf *libcni.RuntimeConf
}

func newLoNet(t *testing.T, v, containerID string) *loNet {
	t.Helper()
	sandbox.Require(t)
	n := sandbox.NewNS(t)
	return &loNet{ns: n, rt: sandbox.Runtime(t),
		list: sandbox.ConfList(t, fmt.Sprintf(`{"cniVersion":%q,"name":"lonet","plugins":[{"type":"loopback"}]}`, v)),
		conf: &libcni.RuntimeConf{ContainerID: containerID, NetNS: n.Path(), IfName: "lo"}}
}

// add runs ADD, failing the test if it fails.
func (l *loNet) add(t *testing.T) cnitypes.Result {
	t.Helper()
	res, err := l.rt.AddNetworkList(context.Background(), l.list, l.conf)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	return res
}

func TestLoopbackThroughLibcni(t *testing.T) {
	sandbox.Require(t)
	for _, v := range version.All {
		t.Run(v, func(t *testing.T) {
			l := newLoNet(t, v, "lo-"+strings.ReplaceAll(v, ".", ""))
			ctx := context.Background()
			res := l.add(t)
			if !loUp(t, l.ns) {
				t.Fatal("after ADD, lo is down")
			}
			checkLoResult(t, v, res)
			checkVerbs(t, l)
			if err := l.rt.DelNetworkList(ctx, l.list, l.conf); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if loUp(t, l.ns) {
				t.Fatal("after DEL, lo is up")
			}
			if err := l.rt.DelNetworkList(ctx, l.list, l.conf); err != nil {
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

func checkVerbs(t *testing.T, l *loNet) {
	t.Helper()
	rt, list, conf := l.rt, l.list, l.conf
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
	l := newLoNet(t, "1.1.0", "gone")
	l.add(t)
	if err := sandbox.RemoveNS(l.ns.Path()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.rt.DelNetworkList(ctx, l.list, l.conf); err != nil {
		t.Fatalf("DEL after the netns is gone: %v", err)
	}
	if err := l.rt.CheckNetworkList(ctx, l.list, l.conf); err == nil {
		t.Fatal("CHECK after the netns is gone succeeded; want an error")
	}
}

func TestLoopbackCheckFailsWhenDown(t *testing.T) {
	l := newLoNet(t, "1.0.0", "down")
	l.add(t)
	err := l.ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(lo)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.rt.CheckNetworkList(context.Background(), l.list, l.conf); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("CHECK with lo down = %v, want an error saying it is down", err)
	}
}
