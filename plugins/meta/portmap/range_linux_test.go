package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/test/sandbox"
)

// rangeMapping is a portMappings entry of n ports from port, netavark's
// range key.
func rangeMapping(port, n int, proto string) map[string]any {
	m := mapping(port, port, proto, "")
	m["range"] = n
	return m
}

// TestRangeReach: with each backend and with no backend key, a mapping of
// tcp 8000-8100 and udp 5000-5009 forwards a port in the middle of each
// range, from outside over both families, from the node to 127.0.0.1 and
// from the container itself (hairpin); the port one past each range's end
// does not answer, though the container listens there too. Another
// container's port inside the range is refused with code 11 and the range
// keeps answering from its own container (TestRangeOverlapRefused has
// every kind of overlap). CHECK passes; DEL
// leaves no rule, no map element, and the port no longer answers.
func TestRangeReach(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables, ""} {
		t.Run("backend="+backend, func(t *testing.T) {
			enableForwarding(t)
			n := newPMNet(t, "1.0.0", backend, fmt.Sprintf("pmrg%d", i), 110+i)
			client := newPeer(t, fmt.Sprintf("pmrgc%d", i), 60+i)
			a := n.add("ctr-range", rangeMapping(8000, 101, "tcp"), rangeMapping(5000, 10, "udp"))
			servePorts(t, a.ns, "ctr-range", []int{8000, 8050, 8100, 8101}, []int{5005, 5010})
			waitDAD(t, nil, a.ns, client.ns) // the node's too: the bridge's gateway address is new
			for _, tc := range []struct {
				name, proto string
				from        *pmCtr
				viaPeer     bool
				ip          net.IP
				port        int
				answers     bool
			}{
				{"tcp mid-range from outside", "tcp", nil, true, client.nodeIP, 8050, true},
				{"tcp mid-range from outside over IPv6", "tcp", nil, true, client.nodeIP6, 8050, true},
				{"tcp range start from the node to 127.0.0.1", "tcp", nil, false, net.ParseIP("127.0.0.1"), 8000, true},
				{"tcp range end hairpin", "tcp", a, false, client.nodeIP, 8100, true},
				{"udp mid-range from outside", "udp", nil, true, client.nodeIP, 5005, true},
				{"tcp one past the end", "tcp", nil, true, client.nodeIP, 8101, false},
				{"udp one past the end", "udp", nil, true, client.nodeIP, 5010, false},
			} {
				from := a.ns
				switch {
				case tc.viaPeer:
					from = client.ns
				case tc.from == nil:
					from = nil
				}
				got, err := ask(from, tc.proto, tc.ip, tc.port)
				if tc.answers && got != "ctr-range" {
					t.Errorf("%s: %s %s:%d answered %q, %v; want ctr-range", tc.name, tc.proto, tc.ip, tc.port, got, err)
				}
				if !tc.answers && got != "" {
					t.Errorf("%s: %s %s:%d answered %q; want no answer", tc.name, tc.proto, tc.ip, tc.port, got)
				}
			}
			if err := n.rt.CheckNetworkList(context.Background(), n.list, a.rc); err != nil {
				t.Errorf("CHECK after ADD: %v", err)
			}
			if t.Failed() {
				t.Logf("container result: %+v\nruleset:\n%s", a.res, ruleset(t))
			}
			checkOverlap(t, n, client)
			if err := n.del(a); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if left := ownerRules(t); len(left) > 0 {
				t.Errorf("DEL left %q", left)
			}
			if rs := ruleset(t); strings.Contains(rs, "8000-8100") || strings.Contains(rs, "8000:8100") {
				t.Errorf("DEL left the range in the ruleset:\n%s", rs)
			}
			if got, _ := ask(client.ns, "tcp", client.nodeIP, 8050); got != "" {
				t.Errorf("after DEL, tcp %s:8050 answered %q", client.nodeIP, got)
			}
		})
	}
}

// checkOverlap adds a container mapping tcp 8050, inside the range:
// refused with code 11, the range still answering from its container.
func checkOverlap(t *testing.T, n *pmNet, client *peer) {
	t.Helper()
	refusedAdd(t, n, "ctr-overlap", mapping(8050, 80, "tcp", ""), "tcp 8050", "tcp 8000-8100", "/ctr-range/eth0")
	if got, err := ask(client.ns, "tcp", client.nodeIP, 8050); got != "ctr-range" {
		t.Errorf("after the overlapping ADD, tcp 8050 answered %q, %v; want ctr-range", got, err)
	}
}

// TestRangeUDPFollowsReplacement: a client keeps sending to a UDP port in
// the middle of a range; the container behind the range is replaced; the
// next datagrams reach the new one (the conntrack entries of every port
// of the range are flushed, not only the first port's).
func TestRangeUDPFollowsReplacement(t *testing.T) {
	sandbox.Require(t)
	for i, backend := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		t.Run(backend, func(t *testing.T) {
			enableForwarding(t)
			n := newPMNet(t, "1.0.0", backend, fmt.Sprintf("pmru%d", i), 120+i)
			client := newPeer(t, fmt.Sprintf("pmruc%d", i), 70+i)
			followReplacement(t, n, client, 5007, rangeMapping(5000, 10, "udp"), 5007)
		})
	}
}
