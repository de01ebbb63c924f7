package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/sysctl"
	"cnisuite/test/sandbox"
)

// TestIPv6OffOnIPv4OnlyNetworks: a pod that IPAM gives IPv4 addresses only
// has IPv6 off on its interface (Docker's answer to CVE-2024-32473): no
// IPv6 address, and none of the multicast a fresh IPv6 interface sends,
// which the bridge would flood to every other pod. A pod with an IPv6
// address keeps IPv6 and sends its MLD reports; a layer-2 pod (no IPAM)
// is left as the kernel makes it; a chained tuning turns IPv6 back on.
func TestIPv6OffOnIPv4OnlyNetworks(t *testing.T) {
	optIn := `,{"type":"tuning","sysctl":{"net.ipv6.conf.IFNAME.disable_ipv6":"0"}}`
	tests := []struct {
		name, extra, ipam, tail string
		off                     bool
	}{
		{"ipv4_only", "", hostLocal(t, "10.96.1.0/24"), "", true},
		{"dual_stack", "", hostLocal(t, "10.96.2.0/24", "fd96:2::/64"), "", false},
		{"ipv6_only", "", hostLocal(t, "fd96:3::/64"), "", false},
		{"layer_2", "", "{}", "", false},
		{"ipv4_only_then_tuning", "", hostLocal(t, "10.96.5.0/24"), optIn, false},
		// enabledad's order brings the interface up before its addresses:
		// only for a pod that has an IPv6 address to detect duplicates of.
		{"ipv4_only_enabledad", `"enabledad":true,`, hostLocal(t, "10.96.6.0/24"), "", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sandbox.Require(t)
			br := "bv6off" + strconv.Itoa(i)
			sandbox.RemoveLinkAtEnd(t, br)
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"net-%s","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,%s"ipam":%s}%s]}`,
				br, br, tt.extra, tt.ipam, tt.tail)
			n := &testNet{t: t, rt: sandbox.Runtime(t), list: sandbox.ConfList(t, conf), bridge: br}
			c := n.add("v6")
			_ = c.ns.Do(func() error {
				v, err := sysctl.Get("net/ipv6/conf/eth0/disable_ipv6")
				if want := map[bool]string{true: "1", false: "0"}[tt.off]; v != want || err != nil {
					t.Errorf("disable_ipv6 of eth0 = %q, %v; want %s", v, err, want)
				}
				l, err := netlink.LinkByName("eth0")
				if err != nil {
					t.Fatal(err)
				}
				addrs, err := netlink.AddrList(l, netlink.FAMILY_V6)
				if err != nil || tt.off != (len(addrs) == 0) {
					t.Errorf("IPv6 addresses of eth0 = %v, %v; want some: %v", addrs, err, !tt.off)
				}
				sent := icmp6Sent(t, tt.off)
				if tt.off != (sent == 0) {
					t.Errorf("ICMPv6 messages eth0 sent = %d; want some: %v", sent, !tt.off)
				}
				return nil
			})
		})
	}
}

// icmp6Sent reads how many ICMPv6 messages eth0 of the calling thread's
// namespace has sent: once one is counted, or after a second when quiet is
// set (a fresh IPv6 interface sends its first MLD report at once).
func icmp6Sent(t *testing.T, quiet bool) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	if quiet {
		deadline = time.Now().Add(time.Second)
	}
	for {
		n := icmp6OutMsgs(t)
		if n > 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func icmp6OutMsgs(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/net/dev_snmp6/eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Icmp6OutMsgs" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no Icmp6OutMsgs in dev_snmp6/eth0:\n%s", b)
	return 0
}
