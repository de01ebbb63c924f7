package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/sandbox"

	"github.com/containernetworking/cni/libcni"
)

// TestIngressFilter: with "ingressFilter": true, a "LAN" namespace that
// routes the pod subnet to the node reaches no port of a container
// directly, IPv4 and IPv6, while the container's published port answers
// it through the node's address, the container's own connections to the
// LAN get their replies, and the node and the container's neighbours on
// the bridge still reach it (br_netfilter on, so that bridged frames meet
// the forward hook too). The same LAN reaches a container of a network
// without the key, so the refusal is the filter's doing. Every backend,
// and the configuration without a backend key; the network's chain goes
// with its last DEL.
func TestIngressFilter(t *testing.T) {
	for k, backend := range []string{"", firewall.KindNFTables, firewall.KindIPTables} {
		t.Run("backend="+backend, func(t *testing.T) {
			setBrNetfilter(t, true)
			lan := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
			extra := ""
			if backend != "" {
				extra = `"ipMasqBackend":"` + backend + `",`
			}
			sub4 := func(i int) string { return fmt.Sprintf("10.94.%d.0/24", 10*k+i) }
			sub6 := func(i int) string { return fmt.Sprintf("fd94:%d::/64", 10*k+i) }
			f := isoNet(t, fmt.Sprintf("ingf%d", k), `"ingressFilter":true,`+extra, sub4(1), sub6(1))
			o := isoNet(t, fmt.Sprintf("ingo%d", k), extra, sub4(2), sub6(2))
			for i := 1; i <= 2; i++ {
				run(t, lan, "ip", "route", "add", sub4(i), "via", upNode4.String())
				run(t, lan, "ip", "-6", "route", "add", sub6(i), "via", upNode6.String())
			}
			f1, f2 := f.addMapped("ing-f1", 18100, 8100), f.addMapped("ing-f2", 18101, 8101)
			o1 := o.addMapped("ing-o1", 18102, 8102)
			for _, fam := range []int{4, 6} {
				node, peer := upNode4, upPeer4
				if fam == 6 {
					node, peer = upNode6, upPeer6
				}
				runProbes(t, []probe{
					{"LAN → filtered container", func() error { return tcp(lan, f1.ns, f1.addr(fam), 0, blockedWait) }},
					{"LAN → filtered container's published port, directly", func() error {
						return tcp(lan, f1.ns, f1.addr(fam), 8100, blockedWait)
					}},
				}, false)
				wantConnect(t, "LAN → container without the filter", tcp(lan, o1.ns, o1.addr(fam), 0, 10*time.Second))
				wantConnect(t, "LAN → published port on the node", dialMapped(lan, f1, fam, 8100, node, 18100))
				wantConnect(t, "container → LAN", tcp(f1.ns, lan, peer, 0, 10*time.Second))
				wantConnect(t, "node → container", tcp(nil, f1.ns, f1.addr(fam), 0, 10*time.Second))
				wantConnect(t, "neighbour → container", tcp(f2.ns, f1.ns, f1.addr(fam), 0, 10*time.Second))
			}
			if err := f.check(f1); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			chain := nftmodel.NetChainName(nftmodel.PrefixIngress, firewall.Owner{Plugin: firewall.PluginBridge, Network: "net-" + f.bridge})
			f.del(f1)
			wantBlocked(t, "LAN → f2 after f1 left", tcp(lan, f2.ns, f2.addr(4), 0, blockedWait))
			f.del(f2)
			if rs := ruleset(t); strings.Contains(rs, chain) {
				t.Errorf("chain %s left after the network's last DEL:\n%s", chain, rs)
			}
		})
	}
}

// TestIngressFilterPassesReferenceDNAT: the filter lets through whatever a
// DNAT rule sent to the container, not only our portmap's. The reference
// portmap (v1.9.1, its iptables default) publishes the port here, chained
// after our bridge: the LAN reaches the container through the node's
// address and still not directly.
func TestIngressFilterPassesReferenceDNAT(t *testing.T) {
	setBrNetfilter(t, true)
	lan := peerLink(t, "up0", upNode4, upNode6, upPeer4, upPeer6, true)
	f := isoNet(t, "ingref", `"ingressFilter":true,`, "10.94.90.0/24", "fd94:90::/64")
	// libcni takes the first directory holding a type: portmap is the
	// reference's, bridge and host-local ours.
	ref := sandbox.ReferencePlugins(t, "meta/portmap")
	f.rt = libcni.NewCNIConfigWithCacheDir([]string{ref, sandbox.Bin(t)}, t.TempDir(), nil)
	t.Cleanup(func() { removeReferenceChains(t) })
	run(t, lan, "ip", "route", "add", "10.94.90.0/24", "via", upNode4.String())
	c := f.addMapped("ing-ref", 18190, 8190)
	if rs, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput(); err != nil || !strings.Contains(string(rs), "CNI-HOSTPORT-DNAT") {
		t.Fatalf("the reference portmap wrote no DNAT chain (%v); nat table:\n%s", err, rs)
	}
	wantBlocked(t, "LAN → container's port, directly", tcp(lan, c.ns, c.addr(4), 8190, blockedWait))
	wantConnect(t, "LAN → port published by the reference portmap", dialMapped(lan, c, 4, 8190, upNode4, 18190))
	f.del(c)
}

// removeReferenceChains takes out what the reference portmap leaves in the
// nat tables after its last DEL (its CNI-* chains and the jumps to them
// from the built-in chains): later packages of the same sandbox would find
// a node "with other software's iptables rules" and choose the iptables
// Backend for networks without a backend key.
func removeReferenceChains(t *testing.T) {
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, builtin := range []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"} {
			out, err := exec.Command(tool, "-t", "nat", "-S", builtin).Output()
			if err != nil {
				t.Errorf("%s -t nat -S %s: %v", tool, builtin, err)
				continue
			}
			var jumps []int // rule numbers, 1-based
			n := 0
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "-A ") {
					n++
					if strings.Contains(line, " -j CNI-") {
						jumps = append(jumps, n)
					}
				}
			}
			for i := len(jumps) - 1; i >= 0; i-- {
				if out, err := exec.Command(tool, "-t", "nat", "-D", builtin, fmt.Sprint(jumps[i])).CombinedOutput(); err != nil {
					t.Errorf("%s -t nat -D %s %d: %v: %s", tool, builtin, jumps[i], err, out)
				}
			}
		}
		out, err := exec.Command(tool, "-t", "nat", "-S").Output()
		if err != nil {
			t.Errorf("%s -t nat -S: %v", tool, err)
			continue
		}
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "-N" && strings.HasPrefix(f[1], "CNI-") {
				chains = append(chains, f[1])
			}
		}
		for _, op := range []string{"-F", "-X"} {
			for _, c := range chains {
				if out, err := exec.Command(tool, "-t", "nat", op, c).CombinedOutput(); err != nil {
					t.Errorf("%s -t nat %s %s: %v: %s", tool, op, c, err, out)
				}
			}
		}
	}
}
