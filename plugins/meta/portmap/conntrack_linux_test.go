package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"cnisuite/test/sandbox"
)

// flow is a conntrack entry the test writes: protocol, source and
// destination of its original direction; gone is whether portmap's
// cleanup must delete it.
type flow struct {
	proto, src, dst string
	sport, dport    int
	gone            bool
}

func (f flow) args() []string {
	return []string{"-p", f.proto, "-s", f.src, "-d", f.dst, "--sport", fmt.Sprint(f.sport), "--dport", fmt.Sprint(f.dport)}
}

// state is what conntrack -I needs of a TCP entry.
func (f flow) state() []string {
	if f.proto == "tcp" {
		return []string{"--state", "ESTABLISHED"}
	}
	return nil
}

func (f flow) String() string {
	return fmt.Sprintf("%s %s:%d -> %s:%d", f.proto, f.src, f.sport, f.dst, f.dport)
}

// insert writes the flows into the node's conntrack table.
// Equivalent to: conntrack -I -p udp -s $src -d $dst --sport … --dport … -t 120
func insertFlows(t *testing.T, flows []flow) {
	t.Helper()
	for _, f := range flows {
		_ = exec.Command("conntrack", append([]string{"-D"}, f.args()...)...).Run() // a left-over twin
		cmd := exec.Command("conntrack", append(append(append([]string{"-I"}, f.args()...), f.state()...), "-t", "120")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", cmd, err, out)
		}
	}
}

// checkFlows fails t for each flow that is there though it must be gone,
// or gone though it must stay.
func checkFlows(t *testing.T, verb string, flows []flow) {
	t.Helper()
	for _, f := range flows {
		there := exec.Command("conntrack", append([]string{"-G"}, f.args()...)...).Run() == nil
		if there == f.gone {
			t.Errorf("after %s, conntrack entry %s there = %v, want %v", verb, f, there, !f.gone)
		}
	}
}

// TestUDPFlushOnlyMapped: the UDP conntrack cleanup of ADD and DEL deletes
// the entries of flows the mappings catch (to the mapped ports of the
// node's addresses, or of the mapping's hostIP) and no other: not the
// node's own flows to other machines on the same ports, not TCP, not
// other ports or addresses. Before, it matched the port alone, so a UDP
// range 1-65535 deleted every UDP entry of the node.
func TestUDPFlushOnlyMapped(t *testing.T) {
	sandbox.Require(t)
	d := direct{bin: filepath.Join(sandbox.Bin(t), "portmap"), path: os.Getenv("PATH")}
	for i, backend := range []string{"nftables", "iptables"} {
		t.Run(backend, func(t *testing.T) {
			p := newPeer(t, fmt.Sprintf("pmct%d", i), 90+i)
			node, peer, remote := p.nodeIP.String(), p.peerIP.String(), "198.51.100.7"
			every := []flow{
				{"udp", peer, node, 40000, 5005, true},            // to the node: caught
				{"udp", "127.0.0.1", "127.0.0.1", 40001, 9, true}, // to the node from itself: caught
				{"udp", node, remote, 40002, 53, false},           // the node's own query to a server
				{"udp", peer, remote, 40003, 5005, false},         // routed through the node
				{"tcp", peer, node, 40004, 5005, false},           // another protocol
			}
			full := map[string]any{"hostPort": 1, "containerPort": 1, "protocol": "udp", "range": 65535}
			runFlushCase(t, d, backend, "ct-every", every, full, map[string]any{"maxHostPorts": 65535})
			onHost := []flow{
				{"udp", peer, node, 40010, 5353, true},                // to the mapping's hostIP
				{"udp", "127.0.0.1", "127.0.0.1", 40011, 5353, false}, // another address of the node
				{"udp", peer, node, 40012, 5354, false},               // another port
			}
			single := map[string]any{"hostPort": 5353, "containerPort": 53, "protocol": "udp", "hostIP": node}
			runFlushCase(t, d, backend, "ct-host", onHost, single, nil)
		})
	}
}

// runFlushCase writes the flows, ADDs an attachment of the one mapping and
// checks which flows are gone; then the same around its DEL.
func runFlushCase(t *testing.T, d direct, backend, id string, flows []flow, mapping, extra map[string]any) {
	t.Helper()
	conf := portmapConf(t, "ct-"+backend, backend, []map[string]any{mapping}, extra)
	insertFlows(t, flows)
	if err := d.run("ADD", id, conf); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	checkFlows(t, "ADD "+id, flows)
	insertFlows(t, flows)
	if err := d.run("DEL", id, conf); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	checkFlows(t, "DEL "+id, flows)
}
