package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/test/sandbox"
)

// ruleset returns what a user sees of the node's rules with each tool.
func ruleset(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, cmd := range [][]string{{"iptables-save", "-t", "nat"}, {"ip6tables-save", "-t", "nat"}, {"nft", "list", "ruleset"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
		b.Write(out)
	}
	return b.String()
}

// TestMasqueradeLifecycle: masquerade and spoof-check rules are there after
// ADD and gone after DEL, with both backends, including a DEL without netns,
// one without prevResult and one after the netns is gone.
func TestMasqueradeLifecycle(t *testing.T) {
	dels := []string{"normal", "no_netns", "no_prevresult", "netns_gone"}
	for i, backend := range []string{"iptables", "nftables"} {
		for j, del := range dels {
			t.Run(backend+"/"+del, func(t *testing.T) {
				br := fmt.Sprintf("bq%d%d", i, j)
				subnet := fmt.Sprintf("10.%d.%d.0/24", 200+i, j)
				extra := fmt.Sprintf(`"isGateway":true,"ipMasq":true,"macspoofchk":true,"ipMasqBackend":%q`, backend)
				n := newNet(t, "1.0.0", br, extra, hostLocal(t, subnet))
				c := n.add("masq")
				ip := c.addr(4).String()
				if rs := ruleset(t); !strings.Contains(rs, ip) || !strings.Contains(rs, c.res.Interfaces[ifContainer].Mac) {
					t.Fatalf("after ADD, no rule mentions %s and %s:\n%s", ip, c.res.Interfaces[ifContainer].Mac, rs)
				}
				if err := n.check(c); err != nil {
					t.Errorf("CHECK after ADD = %v", err)
				}
				rt, rc := n.rt, *c.rc
				switch del {
				case "no_netns":
					rc.NetNS = ""
				case "no_prevresult":
					rt = sandbox.Runtime(t) // an empty result cache
				case "netns_gone":
					if err := sandbox.RemoveNS(c.ns.Path()); err != nil {
						t.Fatal(err)
					}
				}
				for k := 0; k < 2; k++ { // twice is fine
					if err := rt.DelNetworkList(context.Background(), n.list, &rc); err != nil {
						t.Fatalf("DEL #%d = %v", k+1, err)
					}
				}
				if rs := ruleset(t); strings.Contains(rs, ip+" ") || strings.Contains(rs, ip+"/") || strings.Contains(rs, c.res.Interfaces[ifContainer].Mac) {
					t.Errorf("after DEL, rules still mention %s:\n%s", ip, rs)
				}
				if _, err := netlink.LinkByName(c.res.Interfaces[ifHost].Name); err == nil {
					t.Errorf("host veth %s left after DEL", c.res.Interfaces[ifHost].Name)
				}
			})
		}
	}
}

// TestCheckDetectsDamage: CHECK fails once an address or the veth is
// removed behind the plugin's back.
func TestCheckDetectsDamage(t *testing.T) {
	damage := map[string]func(t *testing.T, c *ctr){
		"address_removed": func(t *testing.T, c *ctr) {
			_ = c.ns.Do(func() error {
				l, _ := netlink.LinkByName("eth0")
				addrs, _ := link.AddrList(nil, l, netlink.FAMILY_V4)
				for _, a := range addrs {
					if err := netlink.AddrDel(l, &a); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			})
		},
		"veth_removed": func(t *testing.T, c *ctr) {
			if err := netlink.LinkDel(hostLink(t, c.res.Interfaces[ifHost].Name)); err != nil {
				t.Fatal(err)
			}
		},
	}
	i := 0
	for name, fn := range damage {
		i++
		t.Run(name, func(t *testing.T) {
			n := newNet(t, "1.0.0", fmt.Sprintf("bc%d", i), `"isGateway":true`, hostLocal(t, fmt.Sprintf("10.210.%d.0/24", i)))
			c := n.add("chk")
			if err := n.check(c); err != nil {
				t.Fatalf("CHECK after ADD = %v", err)
			}
			fn(t, c)
			if err := n.check(c); err == nil {
				t.Errorf("CHECK after %s = nil, want an error", name)
			}
		})
	}
}

// TestGC removes exactly the rules of the attachments not listed as valid.
func TestGC(t *testing.T) {
	for i, backend := range []string{"iptables", "nftables"} {
		t.Run(backend, func(t *testing.T) {
			extra := fmt.Sprintf(`"isGateway":true,"ipMasq":true,"ipMasqBackend":%q`, backend)
			n := newNet(t, "1.1.0", fmt.Sprintf("bg%d", i), extra, hostLocal(t, fmt.Sprintf("10.220.%d.0/24", i)))
			keep, stale := n.add("gc-keep"), n.add("gc-stale")
			args := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: keep.id, IfName: "eth0"}}}
			if err := n.rt.GCNetworkList(context.Background(), n.list, args); err != nil {
				t.Fatalf("GC = %v", err)
			}
			rs := ruleset(t)
			if !strings.Contains(rs, keep.addr(4).String()) {
				t.Errorf("GC removed the rules of the valid attachment %s", keep.addr(4))
			}
			if strings.Contains(rs, stale.addr(4).String()) {
				t.Errorf("GC left the rules of the stale attachment %s:\n%s", stale.addr(4), rs)
			}
			if err := n.check(keep); err != nil {
				t.Errorf("CHECK of the kept attachment after GC = %v", err)
			}
		})
	}
}

// TestStatus reports code 50 when the bridge name is taken by a non-bridge.
func TestStatus(t *testing.T) {
	n := newNet(t, "1.1.0", "bstatus", "", hostLocal(t, "10.230.0.0/24"))
	if err := n.rt.GetStatusNetworkList(context.Background(), n.list); err != nil {
		t.Fatalf("STATUS without a bridge yet = %v", err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "bstatus"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "bstatus-p"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(hostLink(t, "bstatus")) })
	err := n.rt.GetStatusNetworkList(context.Background(), n.list)
	var e *cnitypes.Error
	if !errors.As(err, &e) || e.Code != 50 {
		t.Errorf("STATUS with a veth named like the bridge = %v, want code 50", err)
	}
}

// TestStatusAsksIPAM: bridge's STATUS passes on its IPAM plugin's code 50
// (here: the only address of the range is leased).
func TestStatusAsksIPAM(t *testing.T) {
	dir := t.TempDir()
	ipam := fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.231.0.0/24","rangeStart":"10.231.0.9","rangeEnd":"10.231.0.9"}]]}`, dir)
	n := newNet(t, "1.1.0", "bstatus2", "", ipam)
	if err := n.rt.GetStatusNetworkList(context.Background(), n.list); err != nil {
		t.Fatalf("STATUS with a free address = %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, n.list.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, n.list.Name, "10.231.0.9"), []byte("other\r\neth0"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := n.rt.GetStatusNetworkList(context.Background(), n.list)
	var e *cnitypes.Error
	if !errors.As(err, &e) || e.Code != 50 || !strings.Contains(e.Msg, "no free address") {
		t.Errorf("STATUS with the range exhausted = %v, want code 50 naming the exhausted range", err)
	}
}
