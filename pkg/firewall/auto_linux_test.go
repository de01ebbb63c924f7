package firewall

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// TestPreferBackend: the node's signals, as readNode reports them, and the
// backend a network without a record gets.
func TestPreferBackend(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    nodeSignals
		want string
	}{
		{"empty node", nodeSignals{}, KindNFTables},
		{"kube-proxy nftables", nodeSignals{kubeProxyNFT: "ip kube-proxy"}, KindNFTables},
		{"kube-proxy nftables beside iptables rules", nodeSignals{kubeProxyNFT: "ip6 kube-proxy", natRules: "iptables-nft ip nat POSTROUTING"}, KindNFTables},
		{"iptables-nft nat rules", nodeSignals{natRules: "iptables-nft ip nat PREROUTING"}, KindIPTables},
		{"iptables-legacy nat rules", nodeSignals{natRules: "iptables-legacy ip nat"}, KindIPTables},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if got, why := tc.s.prefer(); got != tc.want || why == "" {
				t.Errorf("prefer(%+v) = %q (%q), want %q with a reason", tc.s, got, why, tc.want)
			}
		})
	}
}

// autoOn returns an automatic choice over two fakes, recording under a
// temporary directory, on a node whose signals *node says.
func autoOn(t *testing.T, node *nodeSignals) (*auto, *Fake, *Fake) {
	ipt, nft := NewFake(KindIPTables), NewFake(KindNFTables)
	a := newAuto(ipt, nft)
	a.rec.root = filepath.Join(t.TempDir(), "cnisuite")
	a.signals = func() (nodeSignals, error) { return *node, nil }
	return a, ipt, nft
}

// owns reports whether the fake holds rules of o.
func owns(f *Fake, o Owner) bool {
	return slices.Contains(f.Owners(), o)
}

// recorded returns the record of network ("" without one).
func recorded(t *testing.T, a *auto, network string) string {
	t.Helper()
	kind, ok, err := a.rec.read(network)
	if err != nil {
		t.Fatalf("reading the record of %s: %v", network, err)
	}
	if !ok {
		return ""
	}
	return kind
}

// TestAutoKeepsNetworkBackend: the first attachment of a network takes the
// backend the node gives reason for and records it; a later attachment
// keeps it though the node changed (iptables rules appeared), until the
// last attachment goes; the next first attachment chooses again.
func TestAutoKeepsNetworkBackend(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{}
	a, ipt, nft := autoOn(t, &node)
	o1 := Owner{Plugin: PluginBridge, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	o2 := o1
	o2.ContainerID = "c2"
	if err := a.Ensure(ctx, o1, Rules{}); err != nil {
		t.Fatalf("Ensure(o1): %v", err)
	}
	if !owns(nft, o1) || owns(ipt, o1) || recorded(t, a, "net1") != KindNFTables {
		t.Fatalf("empty node: o1 on nftables %v, on iptables %v, record %q; want nftables", owns(nft, o1), owns(ipt, o1), recorded(t, a, "net1"))
	}
	node.natRules = "iptables-nft ip nat POSTROUTING"
	if err := a.Ensure(ctx, o2, Rules{}); err != nil {
		t.Fatalf("Ensure(o2): %v", err)
	}
	if !owns(nft, o2) || owns(ipt, o2) {
		t.Errorf("network already on nftables: o2 on iptables %v, want nftables", owns(ipt, o2))
	}
	other := Owner{Plugin: PluginBridge, Network: "net2", ContainerID: "c3", IfName: "eth0"}
	if err := a.Ensure(ctx, other, Rules{}); err != nil {
		t.Fatalf("Ensure(other network): %v", err)
	}
	if !owns(ipt, other) || recorded(t, a, "net2") != KindIPTables {
		t.Errorf("new network beside iptables nat rules: on iptables %v, record %q; want iptables", owns(ipt, other), recorded(t, a, "net2"))
	}
	for i, o := range []Owner{o1, o2} {
		if err := a.Remove(ctx, o); err != nil {
			t.Fatalf("Remove(%s): %v", o, err)
		}
		if owns(nft, o) {
			t.Errorf("Remove(%s) left its rules", o)
		}
		if want := map[int]string{0: KindNFTables, 1: ""}[i]; recorded(t, a, "net1") != want {
			t.Errorf("after removing %d of 2 attachments: record %q, want %q", i+1, recorded(t, a, "net1"), want)
		}
	}
	if err := a.Ensure(ctx, o1, Rules{}); err != nil {
		t.Fatalf("Ensure(o1) again: %v", err)
	}
	if !owns(ipt, o1) {
		t.Errorf("the network's next first attachment, beside iptables rules: not on iptables")
	}
}

// TestAutoFailedEnsureHeldUntilDEL: an ADD whose rules fail to write
// still holds its network's backend — its DEL must look there for whatever
// the failed write left — and another attachment cannot move the network
// to the other backend meanwhile; the DEL after the failed ADD succeeds and
// lets go, and with the last attachment the record goes. On either backend.
func TestAutoFailedEnsureHeldUntilDEL(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		node, now string // the node's iptables nat rules, at the failed ADD and after
	}{
		{KindIPTables, "iptables-nft ip nat POSTROUTING", ""},
		{KindNFTables, "", "iptables-nft ip nat POSTROUTING"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx := context.Background()
			node := nodeSignals{natRules: tc.node}
			a, ipt, nft := autoOn(t, &node)
			f := map[string]*Fake{KindIPTables: ipt, KindNFTables: nft}[tc.kind]
			failed := Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "c1", IfName: "eth0"}
			next := failed
			next.ContainerID = "c2"
			f.EnsureErr = errors.New("the write failed")
			if err := a.Ensure(ctx, failed, Rules{}); err == nil {
				t.Fatal("Ensure with a failing write = nil")
			}
			if got := recorded(t, a, "net1"); got != tc.kind {
				t.Fatalf("after the failed ADD: record %q, want %q", got, tc.kind)
			}
			f.EnsureErr, node.natRules = nil, tc.now
			if err := a.Ensure(ctx, next, Rules{}); err != nil || !owns(f, next) {
				t.Fatalf("the next attachment: %v, on %s %v; want the held backend", err, tc.kind, owns(f, next))
			}
			if err := a.Remove(ctx, next); err != nil {
				t.Fatal(err)
			}
			if got := recorded(t, a, "net1"); got != tc.kind {
				t.Errorf("the failed ADD's hold not kept until its DEL: record %q", got)
			}
			if err := a.Remove(ctx, failed); err != nil {
				t.Fatalf("DEL after the failed ADD: %v", err)
			}
			if got := recorded(t, a, "net1"); got != "" {
				t.Errorf("after every DEL: record %q left", got)
			}
		})
	}
}

// TestAutoRemoveWithoutRecord: rules written before a record existed (an
// earlier version, the reference plugins) are removed from both backends.
func TestAutoRemoveWithoutRecord(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{}
	a, ipt, nft := autoOn(t, &node)
	o := Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	for _, f := range []*Fake{ipt, nft} {
		if err := f.Ensure(ctx, o, Rules{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Remove(ctx, o); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if owns(ipt, o) || owns(nft, o) {
		t.Errorf("Remove without a record: left on iptables %v, on nftables %v", owns(ipt, o), owns(nft, o))
	}
}

// TestAutoGCReleases: GC lets go of the holds of attachments not kept, and
// the record with the last of them; both backends collect.
func TestAutoGCReleases(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{natRules: "iptables-legacy ip nat"}
	a, ipt, nft := autoOn(t, &node)
	keep := Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	gone := keep
	gone.ContainerID = "c2"
	for _, o := range []Owner{keep, gone} {
		if err := a.Ensure(ctx, o, Rules{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.GC(ctx, PluginPortmap, "net1", []Owner{{ContainerID: "c1", IfName: "eth0"}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if owns(ipt, gone) || !owns(ipt, keep) || recorded(t, a, "net1") != KindIPTables {
		t.Errorf("GC: gone kept %v, kept kept %v, record %q", owns(ipt, gone), owns(ipt, keep), recorded(t, a, "net1"))
	}
	if len(nft.Calls()) == 0 {
		t.Errorf("GC did not ask the nftables backend")
	}
	if err := a.GC(ctx, PluginPortmap, "net1", nil); err != nil {
		t.Fatalf("GC(nothing kept): %v", err)
	}
	if got := recorded(t, a, "net1"); got != "" {
		t.Errorf("GC of every attachment: record %q left", got)
	}
}

// TestAutoPreferredUnusable: the backend the node gives reason for is
// passed over when it is not usable; a network whose record cannot be
// read is an I/O error naming the network.
func TestAutoPreferredUnusable(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{natRules: "iptables-nft ip nat OUTPUT"}
	a, ipt, nft := autoOn(t, &node)
	ipt.Err = types.Errorf(types.ErrNotAvailable, "no iptables-restore")
	o := Owner{Plugin: PluginBridge, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	if err := a.Ensure(ctx, o, Rules{}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if !owns(nft, o) {
		t.Errorf("iptables unusable: not on nftables")
	}
	dir, err := a.rec.dir("net1", false)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := os.WriteFile(dir.Join(recordFile), []byte("ebtables\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = a.Ensure(ctx, o, Rules{})
	if types.Code(err) != types.CodeIO || !strings.Contains(err.Error(), `"net1"`) || !strings.Contains(err.Error(), "ebtables") {
		t.Errorf("Ensure with a bad record = %v (code %d), want code %d naming the network and the content", err, types.Code(err), types.CodeIO)
	}
}

// TestAutoRecordRefusesLink: a link planted where the records live is
// refused, and nothing is written where it points.
func TestAutoRecordRefusesLink(t *testing.T) {
	node := nodeSignals{}
	a, _, nft := autoOn(t, &node)
	elsewhere := t.TempDir()
	if err := os.MkdirAll(a.rec.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(a.rec.root, RecordDir)); err != nil {
		t.Fatal(err)
	}
	o := Owner{Plugin: PluginBridge, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	err := a.Ensure(context.Background(), o, Rules{})
	if !errors.Is(err, statedir.ErrLink) || types.Code(err) != types.CodeIO {
		t.Errorf("Ensure with %s a link = %v (code %d), want statedir.ErrLink, code %d", RecordDir, err, types.Code(err), types.CodeIO)
	}
	if owns(nft, o) {
		t.Errorf("rules written though the record could not be")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("written through the link: %v", entries)
	}
}

// TestAutoHostPortAcrossBackends: with the claims New puts in front of the
// automatic choice, a host port held by an attachment of a network on one
// backend fails the ADD of another network's attachment on the other
// backend (code 11, naming the port and the holder) when their addresses
// overlap; other ports, protocols and families pass; DEL and GC let go of
// the claims.
func TestAutoHostPortAcrossBackends(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{}
	a, ipt, _ := autoOn(t, &node)
	c := &claimed{a, claimStore{root: a.rec.root}}
	ports := portRules
	tcp := func(port int, ip string) PortMapping {
		return PortMapping{HostPort: port, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP(ip)}
	}
	onNFT := Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	if err := c.Ensure(ctx, onNFT, ports(tcp(8080, ""), tcp(9090, "10.0.0.1"))); err != nil {
		t.Fatalf("Ensure on nftables: %v", err)
	}
	node.natRules = "iptables-nft ip nat POSTROUTING" // net2 will take iptables
	onIPT := Owner{Plugin: PluginPortmap, Network: "net2", ContainerID: "c2", IfName: "eth0"}
	err := c.Ensure(ctx, onIPT, ports(tcp(8080, "10.0.0.2")))
	if types.Code(err) != types.CodeTryAgain || !strings.Contains(err.Error(), "tcp 8080") || !strings.Contains(err.Error(), "portmap/net1/c1/eth0") {
		t.Errorf("Ensure(8080 held on the other backend) = %v (code %d), want code 11 naming tcp 8080 and portmap/net1/c1/eth0", err, types.Code(err))
	}
	if owns(ipt, onIPT) {
		t.Errorf("rules written for a host port held on the other backend")
	}
	for _, m := range []PortMapping{tcp(8081, ""), tcp(9090, "10.0.0.2"), tcp(9090, "fd00::1"), {HostPort: 8080, Protocol: "udp"}} {
		if err := c.Ensure(ctx, onIPT, ports(m)); err != nil {
			t.Errorf("Ensure(%s %d on %v, no overlap) = %v", m.Protocol, m.HostPort, m.HostIP, err)
		}
	}
	if err := c.Remove(ctx, onNFT); err != nil {
		t.Fatal(err)
	}
	if err := c.Ensure(ctx, onIPT, ports(tcp(8080, "10.0.0.2"))); err != nil {
		t.Errorf("Ensure(8080) after its holder's DEL: %v", err)
	}
	if err := c.GC(ctx, PluginPortmap, "net2", nil); err != nil {
		t.Fatal(err)
	}
	node.natRules = ""
	if err := c.Ensure(ctx, onNFT, ports(tcp(8080, ""))); err != nil {
		t.Errorf("Ensure(8080) on nftables after GC dropped the iptables holder: %v", err)
	}
}

// TestAutoWithoutRecords: with nowhere to record (a rootless runtime), each
// call chooses from the node as it is, and DEL looks at both backends.
func TestAutoWithoutRecords(t *testing.T) {
	ctx := context.Background()
	node := nodeSignals{}
	a, ipt, nft := autoOn(t, &node)
	a.rec.root = ""
	o := Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "c1", IfName: "eth0"}
	if err := a.Ensure(ctx, o, Rules{PortMaps: &PortMaps{Mappings: []PortMapping{{HostPort: 80, Protocol: "tcp"}}}}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if !owns(nft, o) {
		t.Errorf("empty node, no records: not on nftables")
	}
	node.natRules = "iptables-legacy ip nat"
	if err := a.Check(ctx, o, Rules{}); err == nil {
		t.Errorf("Check after the node changed: asked nftables, want iptables (no record to keep the choice)")
	}
	if err := a.Remove(ctx, o); err != nil || owns(nft, o) || owns(ipt, o) {
		t.Errorf("Remove without records = %v; left on nftables %v, iptables %v", err, owns(nft, o), owns(ipt, o))
	}
}
