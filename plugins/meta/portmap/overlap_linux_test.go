package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/firewall"
	"cnisuite/test/sandbox"
)

// TestRangeOverlapRefused: with each backend and with no backend key, an
// ADD whose host ports overlap another attachment's (a range over its
// range, a port inside its range, a range around its single port; same
// protocol, overlapping host address) is refused with code 11 naming the
// ports asked for, the ports held and the holder, and the holder's
// mappings keep answering; the holder's own ADD again passes; once the
// holder is deleted, the ports can be taken.
func TestRangeOverlapRefused(t *testing.T) {
	sandbox.Require(t)
	localhost := net.ParseIP("127.0.0.1")
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables, ""} {
		t.Run("backend="+backend, func(t *testing.T) {
			enableForwarding(t)
			br := fmt.Sprintf("pmov%d", i)
			n := newPMNet(t, "1.0.0", backend, br, 130+i)
			a := n.add("ctr-holder", rangeMapping(8000, 101, "tcp"), mapping(9090, 80, "tcp", ""))
			servePorts(t, a.ns, "ctr-holder", []int{8050}, nil)
			holder := "portmap/pm-" + br + "/ctr-holder/eth0"
			for _, tc := range []struct {
				name       string
				m          map[string]any
				asked, got string
			}{
				{"range over the range", rangeMapping(8050, 100, "tcp"), "tcp 8050-8149 on every address", "tcp 8000-8100 on every address"},
				{"port inside the range", mapping(8050, 80, "tcp", "127.0.0.1"), "tcp 8050 on 127.0.0.1", "tcp 8000-8100"},
				{"range around a port", rangeMapping(9000, 200, "tcp"), "tcp 9000-9199", "tcp 9090 on every address"},
			} {
				refusedAdd(t, n, "ctr-"+strings.ReplaceAll(tc.name, " ", "-"), tc.m, tc.asked, tc.got, holder)
				for port, want := range map[int]string{8050: "ctr-holder", 9090: "ctr-holder"} {
					if got, err := ask(nil, "tcp", localhost, port); got != want {
						t.Errorf("after the refused ADD (%s), tcp 127.0.0.1:%d answered %q, %v; want %s", tc.name, port, got, err, want)
					}
				}
			}
			if out, err := addAgain(t, n, a); err != nil {
				t.Errorf("the holder's own ADD again: %v\n%s", err, out)
			}
			if got, err := ask(nil, "tcp", localhost, 8050); got != "ctr-holder" {
				t.Errorf("after the holder's ADD again, tcp 127.0.0.1:8050 answered %q, %v", got, err)
			}
			if err := n.del(a); err != nil {
				t.Fatalf("DEL of the holder: %v", err)
			}
			b := n.add("ctr-after", mapping(8050, 80, "tcp", ""), rangeMapping(9000, 200, "tcp"))
			if got, err := ask(nil, "tcp", localhost, 8050); got != "ctr-after" {
				t.Errorf("once the holder is gone, tcp 127.0.0.1:8050 answered %q, %v; want ctr-after", got, err)
			}
			if err := n.del(b); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("DEL left %q", left)
			}
		})
	}
}

// TestOverlapAcrossBackends: a network on iptables and one on nftables
// share the node's host ports: a port inside a range held on one backend,
// and a range around a port held on the other, are refused with code 11
// naming the holder.
func TestOverlapAcrossBackends(t *testing.T) {
	sandbox.Require(t)
	enableForwarding(t)
	ipt := newPMNet(t, "1.0.0", firewall.KindIPTables, "pmxb0", 140)
	nft := newPMNet(t, "1.0.0", firewall.KindNFTables, "pmxb1", 141)
	a := ipt.add("ctr-ipt", rangeMapping(8000, 101, "tcp"))
	b := nft.add("ctr-nft", mapping(7070, 53, "udp", ""))
	refusedAdd(t, nft, "ctr-nft-2", mapping(8080, 80, "tcp", ""), "tcp 8080", "tcp 8000-8100", "portmap/pm-pmxb0/ctr-ipt/eth0")
	refusedAdd(t, ipt, "ctr-ipt-2", rangeMapping(7000, 101, "udp"), "udp 7000-7100", "udp 7070", "portmap/pm-pmxb1/ctr-nft/eth0")
	if got, err := ask(nil, "udp", net.ParseIP("127.0.0.1"), 7070); got != "ctr-nft" {
		t.Errorf("after the refused ADDs, udp 127.0.0.1:7070 answered %q, %v; want ctr-nft", got, err)
	}
	for _, c := range []struct {
		n *pmNet
		c *pmCtr
	}{{ipt, a}, {nft, b}} {
		if err := c.n.del(c.c); err != nil {
			t.Fatalf("DEL %s: %v", c.c.id, err)
		}
	}
	if left := ownerRules(t); len(left) > 0 {
		t.Errorf("DEL left %q", left)
	}
}

// refusedAdd adds a container with mapping m and wants code 11 whose
// message holds each of want; the runtime's DEL of the refused container
// follows, as a runtime sends it.
func refusedAdd(t *testing.T, n *pmNet, id string, m map[string]any, want ...string) {
	t.Helper()
	c := &pmCtr{id: id, ns: sandbox.NewNS(t)}
	c.rc = &libcni.RuntimeConf{ContainerID: id, IfName: "eth0", NetNS: c.ns.Path(),
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{m}}}
	_, err := n.rt.AddNetworkList(context.Background(), n.list, c.rc)
	var e *cnitypes.Error
	if !errors.As(err, &e) || e.Code != 11 {
		t.Errorf("ADD of %s (%v) = %v, want code 11", id, m, err)
	}
	for _, w := range want {
		if err != nil && !strings.Contains(err.Error(), w) {
			t.Errorf("ADD of %s: message %q does not name %q", id, err, w)
		}
	}
	if err := n.del(c); err != nil {
		t.Errorf("DEL of the refused %s: %v", id, err)
	}
}

// addAgain runs portmap's ADD once more for the attachment c, with the
// result of its first ADD as prevResult, as a runtime repeating an ADD
// sends it.
func addAgain(t *testing.T, n *pmNet, c *pmCtr) ([]byte, error) {
	t.Helper()
	var conf map[string]any
	if err := json.Unmarshal(n.list.Plugins[1].Bytes, &conf); err != nil {
		t.Fatal(err)
	}
	conf["name"], conf["cniVersion"] = n.list.Name, n.list.CNIVersion
	conf["prevResult"] = json.RawMessage(c.raw)
	conf["runtimeConfig"] = map[string]any{"portMappings": c.rc.CapabilityArgs["portMappings"]}
	stdin, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(sandbox.Bin(t), "portmap"))
	cmd.Env = append(os.Environ(), "CNI_COMMAND=ADD", "CNI_CONTAINERID="+c.id, "CNI_NETNS="+c.ns.Path(),
		"CNI_IFNAME=eth0", "CNI_PATH="+sandbox.Bin(t))
	cmd.Stdin = bytes.NewReader(stdin)
	return cmd.CombinedOutput()
}
