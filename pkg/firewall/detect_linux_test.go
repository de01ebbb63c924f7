package firewall

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/iptables"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// sh runs each command line in the namespace of the calling thread.
func sh(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if out, err := exec.Command("sh", "-c", l).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", l, err, out)
		}
	}
}

// TestReadNode: per kind of node, what readNode finds and the backend a
// network without a record gets.
func TestReadNode(t *testing.T) {
	sandbox.Require(t)
	for _, tc := range []struct {
		name, kubeProxy, nat, want string
		setup                      []string
	}{
		{name: "empty node", want: KindNFTables},
		{name: "kube-proxy nftables mode", setup: []string{"nft add table ip kube-proxy"},
			kubeProxy: "ip kube-proxy", want: KindNFTables},
		{name: "kube-proxy nftables mode, IPv6 only, beside Docker", setup: []string{
			"nft add table ip6 kube-proxy", "iptables -t nat -N DOCKER", "iptables -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER"},
			kubeProxy: "ip6 kube-proxy", nat: "iptables-nft ip nat PREROUTING", want: KindNFTables},
		{name: "kubelet canary chain only", setup: []string{"iptables -t nat -N KUBE-KUBELET-CANARY", "ip6tables -t nat -N KUBE-KUBELET-CANARY"},
			want: KindNFTables},
		{name: "Docker on iptables-nft", setup: []string{
			"iptables -t nat -N DOCKER", "iptables -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER",
			"iptables -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE"},
			nat: "iptables-nft ip nat PREROUTING", want: KindIPTables},
		{name: "kube-proxy iptables mode, IPv6", setup: []string{
			"ip6tables -t nat -N KUBE-SERVICES", "ip6tables -t nat -A OUTPUT -j KUBE-SERVICES"},
			nat: "iptables-nft ip6 nat OUTPUT", want: KindIPTables},
		{name: "reference plugins on iptables (an upgrade)", setup: []string{
			"iptables -t nat -N CNI-0123456789abcdef01234567",
			"iptables -t nat -A POSTROUTING -s 10.88.0.2 -m comment --comment 'name: \"podman\" id: \"c1\"' -j CNI-0123456789abcdef01234567"},
			nat: "iptables-nft ip nat POSTROUTING", want: KindIPTables},
		{name: "legacy table loaded, empty", setup: []string{"iptables-legacy -t nat -S", "ip6tables-legacy -t nat -S"},
			want: KindNFTables},
		{name: "Docker on iptables-legacy", setup: []string{"iptables-legacy -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE"},
			nat: "iptables-legacy ip nat", want: KindIPTables},
		{name: "iptables-legacy IPv6 rule", setup: []string{"ip6tables-legacy -t nat -A INPUT -j ACCEPT"},
			nat: "iptables-legacy ip6 nat", want: KindIPTables},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			fwtest.InNS(t, func() {
				sh(t, tc.setup...)
				s, err := readNode()
				if err != nil {
					t.Fatalf("readNode: %v", err)
				}
				got, why := s.prefer()
				if s.kubeProxyNFT != tc.kubeProxy || (tc.kubeProxy == "" && s.natRules != tc.nat) || got != tc.want {
					t.Errorf("readNode = %+v, backend %s (%s); want kube-proxy %q, nat rules %q, backend %s", s, got, why, tc.kubeProxy, tc.nat, tc.want)
				}
			})
		})
	}
}

// onIPTables and onNFTables report where an owner's chains are: in table
// nat as iptables lists it, or in our nftables tables.
func onIPTables(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return strings.Contains(string(out), ":CNIS-MQ-")
}

func onNFTables(t *testing.T) bool {
	t.Helper()
	return strings.Contains(fwtest.Ruleset(t), "table ip cnisuite_masq") && strings.Contains(fwtest.Ruleset(t), "chain mq")
}

// TestAutoOnNode drives the automatic choice with the real backends:
// a network's first attachment on an empty node goes to nftables, and
// its next one stays there after other software's iptables rules appear,
// while a new network goes to iptables; once every attachment is gone,
// nothing of ours is left. Rules an earlier version wrote with iptables
// (no record) are removed by the automatic choice, and keep a network
// being upgraded on iptables.
func TestAutoOnNode(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	owner := func(network, id string) Owner {
		return Owner{Plugin: PluginBridge, Network: network, ContainerID: id, IfName: "eth0"}
	}
	addr := 1
	masq := func() Rules { // a container address of its own each time
		addr++
		return Rules{Masq: []Masq{{Addr: *fwtest.CIDR(t, fmt.Sprintf("10.88.0.%d/16", addr))}}}
	}
	t.Run("network_keeps_its_backend", func(t *testing.T) {
		fwtest.InNS(t, func() {
			a, _ := New(ctx, "")
			if err := a.Ensure(ctx, owner("net1", "c1"), masq()); err != nil {
				t.Fatalf("Ensure(net1/c1): %v", err)
			}
			if !onNFTables(t) || onIPTables(t) {
				t.Fatalf("empty node: on nftables %v, on iptables %v; want nftables", onNFTables(t), onIPTables(t))
			}
			sh(t, "iptables -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE")
			r2 := masq()
			if err := a.Ensure(ctx, owner("net1", "c2"), r2); err != nil {
				t.Fatalf("Ensure(net1/c2): %v", err)
			}
			if onIPTables(t) {
				t.Errorf("net1 mixed backends: its second attachment went to iptables")
			}
			if err := a.Check(ctx, owner("net1", "c2"), r2); err != nil {
				t.Errorf("Check(net1/c2): %v", err)
			}
			if err := a.Ensure(ctx, owner("net2", "c3"), masq()); err != nil {
				t.Fatalf("Ensure(net2/c3): %v", err)
			}
			if !onIPTables(t) {
				t.Errorf("new network beside Docker's rules: not on iptables")
			}
			for _, o := range []Owner{owner("net1", "c1"), owner("net1", "c2"), owner("net2", "c3")} {
				if err := a.Remove(ctx, o); err != nil {
					t.Fatalf("Remove(%s): %v", o, err)
				}
			}
			fwtest.AssertNoOwnerRules(t)
		})
	})
	t.Run("host_port_across_backends", func(t *testing.T) {
		fwtest.InNS(t, func() {
			a, _ := New(ctx, "")
			pm := func(ctr string) Rules {
				return fwtest.PortRules(t, func(p *PortMaps) { p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, ctr), nil })
			}
			pmOwner := func(network, id string) Owner {
				return Owner{Plugin: PluginPortmap, Network: network, ContainerID: id, IfName: "eth0"}
			}
			if err := a.Ensure(ctx, pmOwner("net1", "c1"), pm("10.88.0.2/16")); err != nil {
				t.Fatalf("Ensure(net1/c1) on the empty node: %v", err)
			}
			sh(t, "iptables -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE")
			err := a.Ensure(ctx, pmOwner("net2", "c2"), pm("10.89.0.2/16"))
			if !errors.Is(err, ErrConflict) {
				t.Errorf("Ensure(net2/c2, on iptables, the host ports net1 holds on nftables) = %v, want ErrConflict", err)
			}
			out, _ := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
			if strings.Contains(string(out), ":CNIS-DN-") {
				t.Errorf("DNAT chains written for host ports held on nftables:\n%s", out)
			}
			for _, o := range []Owner{pmOwner("net2", "c2"), pmOwner("net1", "c1")} {
				if err := a.Remove(ctx, o); err != nil {
					t.Fatalf("Remove(%s): %v", o, err)
				}
			}
			if err := a.Ensure(ctx, pmOwner("net2", "c2"), pm("10.89.0.2/16")); err != nil {
				t.Errorf("Ensure(net2/c2) once net1/c1 is gone: %v", err)
			}
			if err := a.Remove(ctx, pmOwner("net2", "c2")); err != nil {
				t.Fatal(err)
			}
			fwtest.AssertNoOwnerRules(t)
		})
	})
	t.Run("upgrade_from_iptables", func(t *testing.T) {
		fwtest.InNS(t, func() {
			old := iptables.New() // what an earlier version wrote by default
			r1 := masq()
			if err := old.Ensure(ctx, owner("net1", "c1"), r1); err != nil {
				t.Fatalf("iptables Ensure: %v", err)
			}
			a, _ := New(ctx, "")
			if err := a.Ensure(ctx, owner("net1", "c2"), masq()); err != nil {
				t.Fatalf("Ensure(net1/c2): %v", err)
			}
			if onNFTables(t) {
				t.Errorf("network with pods on iptables moved a new pod to nftables")
			}
			if err := a.Check(ctx, owner("net1", "c1"), r1); err != nil {
				t.Errorf("Check(pod from before the upgrade): %v", err)
			}
			for _, o := range []Owner{owner("net1", "c2"), owner("net1", "c1")} {
				if err := a.Remove(ctx, o); err != nil {
					t.Fatalf("Remove(%s): %v", o, err)
				}
			}
			fwtest.AssertNoOwnerRules(t)
		})
	})
}
