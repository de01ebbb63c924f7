package nftables_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// refState is what a reference plugin writes for one attachment: an
// iptables-restore payload or an nft script, per container.
type refState struct {
	name   string
	owner  fwapi.Owner
	ipt    func(cid string) string // iptables-restore lines, without *nat/COMMIT
	nft    func(cid string) string // nft script
	shared []string                // what must stay: the reference's shared chains
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{nftables.RefMasqChain(fwapi.Owner{Network: "test", ContainerID: "1234"}), "CNI-2bbe0c48b91a7d1b8a6753a8"},
		{nftables.RefDNChain(fwapi.Owner{Network: "test", ContainerID: "1234"}), "CNI-DN-2bbe0c48b91a7d1b8a675"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("reference chain name = %q, want %q", tc.got, tc.want)
		}
	}
}

func refCases() []refState {
	o1 := func(p string) fwapi.Owner {
		return fwapi.Owner{Plugin: p, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	}
	dn := func(cid string) string { return nftables.RefDNChain(fwapi.Owner{Network: "net1", ContainerID: cid}) }
	mq := func(cid string) string { return nftables.RefMasqChain(fwapi.Owner{Network: "net1", ContainerID: cid}) }
	port := map[string]string{"ctr1": "8080", "ctr2": "8081"}
	ip := map[string]string{"ctr1": "10.22.0.2", "ctr2": "10.22.0.3"}
	return []refState{
		{name: "portmap_iptables", owner: o1(fwapi.PluginPortmap), shared: []string{"CNI-HOSTPORT-DNAT"},
			ipt: func(cid string) string {
				return fmt.Sprintf(`:%[1]s - [0:0]
-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"net1\" id: \"%[2]s\"" -m multiport --dports %[3]s -j %[1]s
-A %[1]s -p tcp -m tcp --dport %[3]s -j DNAT --to-destination %[4]s:80
`, dn(cid), cid, port[cid], ip[cid])
			}},
		{name: "portmap_nftables", owner: o1(fwapi.PluginPortmap), shared: []string{"table ip cni_hostport"},
			nft: func(cid string) string {
				return fmt.Sprintf(`add rule ip cni_hostport hostports tcp dport %[2]s dnat to %[3]s:80 comment "%[1]s"
add rule ip cni_hostport masquerading ip saddr %[3]s ip daddr %[3]s masquerade comment "%[1]s"
add rule ip cni_hostport masquerading ip saddr 127.0.0.1 ip daddr %[3]s masquerade comment "%[1]s"
`, cid, port[cid], ip[cid])
			}},
		{name: "bridge_iptables", owner: o1(fwapi.PluginBridge), shared: []string{"POSTROUTING"},
			ipt: func(cid string) string {
				c := fmt.Sprintf(`-m comment --comment "name: \"net1\" id: \"%s\""`, cid)
				return fmt.Sprintf(`:%[1]s - [0:0]
-A POSTROUTING -s %[2]s/32 %[3]s -j %[1]s
-A %[1]s -d 10.22.0.0/24 %[3]s -j ACCEPT
-A %[1]s ! -d 224.0.0.0/4 %[3]s -j MASQUERADE
`, mq(cid), ip[cid], c)
			}},
		{name: "bridge_nftables", owner: o1(fwapi.PluginBridge), shared: []string{"chain masq_checks"},
			nft: func(cid string) string {
				c := nftables.RefHash16("net1") + "-" + nftables.RefHash16("eth0:"+cid) + ", net: net1, if: eth0, id: " + cid
				return fmt.Sprintf("add rule inet cni_plugins_masquerade masq_checks ip saddr %s ip daddr != 10.22.0.0/24 masquerade comment %q\n", ip[cid], c)
			}},
		{name: "bridge_spoofcheck", owner: o1(fwapi.PluginBridge), shared: []string{"table bridge nat"},
			nft: func(cid string) string {
				ch := "cni-br-iface-" + cid + "-eth0"
				c := fmt.Sprintf("comment %q", "macspoofchk-"+cid+"-eth0")
				return fmt.Sprintf(`add chain bridge nat %[1]s
add chain bridge nat %[1]s-mac
add rule bridge nat PREROUTING iifname "veth-%[3]s" jump %[1]s %[2]s
add rule bridge nat %[1]s jump %[1]s-mac %[2]s
add rule bridge nat %[1]s-mac ether saddr 0a:58:0a:16:00:02 return %[2]s
add rule bridge nat %[1]s-mac drop %[2]s
`, ch, c, cid)
			}},
	}
}

// refBaseNFT is the reference plugins' shared state the per-attachment rules
// hang from.
const refBaseNFT = `add table ip cni_hostport
add chain ip cni_hostport hostports
add chain ip cni_hostport hostip_hostports
add chain ip cni_hostport prerouting { type nat hook prerouting priority dstnat; policy accept; }
add rule ip cni_hostport prerouting fib daddr type local jump hostports
add chain ip cni_hostport masquerading { type nat hook postrouting priority srcnat; policy accept; }
add table inet cni_plugins_masquerade
add chain inet cni_plugins_masquerade masq_checks
add chain inet cni_plugins_masquerade postrouting { type nat hook postrouting priority srcnat; policy accept; }
add rule inet cni_plugins_masquerade postrouting goto masq_checks
add table bridge nat
add chain bridge nat PREROUTING { type filter hook prerouting priority -300; policy accept; }
`

const refBaseIPT = `:CNI-HOSTPORT-DNAT - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
`

// TestRemoveDeletesReferenceRules writes, by hand, what the reference
// plugins write for two attachments (ctr1, ctr2), then removes ctr1 with
// each backend: everything of ctr1 must be gone, ctr2 and the reference's
// shared chains untouched.
func TestRemoveDeletesReferenceRules(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	for _, tc := range refCases() {
		for _, kind := range []string{firewall.KindNFTables, firewall.KindIPTables} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				fwtest.InNS(t, func() {
					writeReference(t, tc)
					gone := []string{"ctr1", nftables.RefDNChain(tc.owner), nftables.RefMasqChain(tc.owner)}
					before := refListing(t, tc)
					if !strings.Contains(before, "ctr1") && !strings.Contains(before, nftables.RefDNChain(tc.owner)) &&
						!strings.Contains(before, nftables.RefMasqChain(tc.owner)) {
						t.Fatalf("setup wrote nothing of ctr1:\n%s", before)
					}
					b, err := firewall.New(ctx, kind)
					if err != nil {
						t.Fatal(err)
					}
					if err := b.Remove(ctx, tc.owner); err != nil {
						t.Fatalf("Remove: %v", err)
					}
					after := refListing(t, tc)
					for _, g := range gone {
						if strings.Contains(after, g) {
							t.Errorf("after Remove, the ruleset still holds %q:\n%s", g, after)
						}
					}
					for _, k := range append([]string{"ctr2"}, tc.shared...) {
						if !strings.Contains(after, k) {
							t.Errorf("Remove took %q along:\n%s", k, after)
						}
					}
				})
			})
		}
	}
}

func writeReference(t *testing.T, tc refState) {
	t.Helper()
	if tc.nft != nil {
		script := refBaseNFT + tc.nft("ctr1") + tc.nft("ctr2")
		if err := nftmodel.RunScript(context.Background(), script); err != nil {
			t.Fatalf("writing the reference's nftables rules: %v\n%s", err, script)
		}
		return
	}
	payload := "*nat\n" + refBaseIPT + tc.ipt("ctr1") + tc.ipt("ctr2") + "COMMIT\n"
	cmd := exec.Command("iptables-restore", "--noflush", "--wait")
	cmd.Stdin = strings.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing the reference's iptables rules: %v: %s\n%s", err, out, payload)
	}
}

// refListing is what the reference's tool shows: iptables -S (nft does not
// print the comments of iptables-nft rules), or nft list ruleset.
func refListing(t *testing.T, tc refState) string {
	t.Helper()
	if tc.nft != nil {
		return fwtest.Listing(t)
	}
	out, err := exec.Command("iptables", "-t", "nat", "-S").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S: %v: %s", err, out)
	}
	return string(out)
}

// TestDeleteKeepsTheCause: when reading the reference's rules fails, Delete
// says so with every cause wrapped (it printed them with %v, so no caller
// could tell a closed socket from a missing permission).
func TestDeleteKeepsTheCause(t *testing.T) {
	conn, err := netfilter.Dial()
	if err != nil {
		t.Skipf("no netfilter socket here: %v", err)
	}
	conn.Close()
	for _, o := range []fwapi.Owner{fwtest.PortOwner, fwtest.BridgeOwner} {
		err := nftables.DeleteReference(conn, o, &netfilter.Batch{})
		if !errors.Is(err, unix.EBADF) || types.Code(err) != types.CodeIO {
			t.Errorf("Delete(%s) on a closed socket = %v (code %d), want EBADF wrapped, code %d", o.Plugin, err, types.Code(err), types.CodeIO)
		}
	}
}
