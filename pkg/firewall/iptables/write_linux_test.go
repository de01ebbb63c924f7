package iptables

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/test/fwtest"
	"cnisuite/test/userns"
)

// primeNAT makes table nat with its built-in chains in both families, as a
// node that already ran iptables has them, plus KUBE-MARK-MASQ (the
// external mark chain of a test case): the way iptables-restore creates
// them, through the fallback of a first Ensure.
func primeNAT(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	b := New()
	o := fwtest.PortOwner
	o.ContainerID = "prime"
	if err := b.Ensure(ctx, o, fwtest.PortRules(t, func(*fwapi.PortMaps) {})); err != nil {
		t.Fatalf("priming table nat: %v", err)
	}
	if err := b.Remove(ctx, o); err != nil {
		t.Fatalf("priming table nat: %v", err)
	}
	for _, f := range families {
		if err := newLegacy("").tools(f).restoreNoflush(ctx, "*nat\n:KUBE-MARK-MASQ - [0:0]\nCOMMIT\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// saveNAT returns iptables-save -t nat and ip6tables-save -t nat without
// their comment lines (header, date).
func saveNAT(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(cmd, "-t", "nat").CombinedOutput()
		if err != nil {
			t.Fatalf("%s -t nat: %v: %s", cmd, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				fmt.Fprintf(&b, "%s: %s\n", cmd, l)
			}
		}
	}
	return b.String()
}

// dumpNAT returns the raw expressions and user data of every rule of the
// chains iptables-save lists, as the kernel dumps them.
func dumpNAT(t *testing.T, save string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.Split(save, "\n") {
		cmd, chain, ok := strings.Cut(l, ": :")
		if !ok {
			continue
		}
		chain, _, _ = strings.Cut(chain, " ")
		family := byte(unix.NFPROTO_IPV4)
		if cmd == "ip6tables-save" {
			family = unix.NFPROTO_IPV6
		}
		rules, err := listRules(family, "nat", chain)
		if err != nil {
			t.Fatalf("listing %s: %v", chain, err)
		}
		for _, r := range rules {
			fmt.Fprintf(&b, "%d %s: %s userdata=%s\n", family, chain, hex.EncodeToString(r.Exprs), hex.EncodeToString(r.Userdata))
		}
	}
	return b.String()
}

// written returns the nat tables of a fresh namespace after Ensure of each
// rule set in turn with the writer w: iptables-restore (newLegacy("") on
// this iptables-nft node) or netlink alone (&nft{}, which has no
// iptables-restore to fall back on).
func written(t *testing.T, w writer, o fwapi.Owner, sets ...fwapi.Rules) (save, dump string) {
	return writtenIn(t, true, w, o, sets...)
}

// writtenIn is written in a namespace with table nat (prime) or none.
func writtenIn(t *testing.T, prime bool, w writer, o fwapi.Owner, sets ...fwapi.Rules) (save, dump string) {
	t.Helper()
	inNS(t, func() {
		if prime {
			primeNAT(t)
		}
		b := withWriter(w)
		for i, r := range sets {
			if err := b.Ensure(context.Background(), o, r); err != nil {
				t.Fatalf("Ensure #%d (%T): %v", i, w, err)
			}
		}
		save = saveNAT(t)
		dump = dumpNAT(t, save)
	})
	return save, dump
}

// writeCases are the rule sets the netlink writer must write exactly as
// iptables-restore does.
func writeCases(t *testing.T) []fwtest.Case {
	var out []fwtest.Case
	for _, c := range fwtest.RuleCases(t) {
		if (c.Rules.Masq != nil || c.Rules.PortMaps != nil) && !strings.HasSuffix(c.Name, "_ipt") && !strings.HasSuffix(c.Name, "_nft") {
			out = append(out, c)
		}
	}
	return append(out,
		fwtest.Case{Name: "masq_two_v4", Owner: fwtest.BridgeOwner, Rules: fwapi.Rules{Masq: []fwapi.Masq{
			{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}, {Addr: *fwtest.CIDR(t, "10.99.0.2/20")}, {Addr: *fwtest.CIDR(t, "fd00:88::2/64")}}}},
		fwtest.Case{Name: "portmap_tcp_udp_sctp", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.Mappings = append(p.Mappings,
				fwapi.PortMapping{HostPort: 9090, ContainerPort: 90, Protocol: "sctp"},
				fwapi.PortMapping{HostPort: 8081, ContainerPort: 81, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.10")},
				fwapi.PortMapping{HostPort: 8082, ContainerPort: 82, Protocol: "udp", HostIP: net.ParseIP("2001:db8::10")})
		})},
	)
}

// TestNetlinkWriteMatchesRestore: what Ensure writes over netlink reads
// back in iptables-save, and in the kernel's own dump of expressions and
// user data, exactly as what iptables-restore writes.
func TestNetlinkWriteMatchesRestore(t *testing.T) {
	userns.RequireStateDirs(t)
	for _, c := range writeCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			wantSave, wantDump := written(t, newLegacy(""), c.Owner, c.Rules)
			gotSave, gotDump := written(t, &nft{}, c.Owner, c.Rules)
			if gotSave != wantSave {
				t.Errorf("iptables-save after the netlink write:\n%s\nwant (iptables-restore):\n%s", gotSave, wantSave)
			}
			if gotDump != wantDump {
				t.Errorf("rules dumped after the netlink write:\n%s\nwant (iptables-restore):\n%s", gotDump, wantDump)
			}
			if !strings.Contains(gotSave, "-j CNIS-") {
				t.Errorf("no jump to an owner chain in:\n%s", gotSave)
			}
		})
	}
}

// TestNetlinkMakesTableNAT: in a namespace without table nat, the netlink
// writer makes it with the built-in chains the jumps need, as
// iptables-restore does on an iptables-nft node: iptables-save and the
// kernel's dump read the same (and iptables-save finds the table
// compatible).
func TestNetlinkMakesTableNAT(t *testing.T) {
	userns.RequireStateDirs(t)
	for _, c := range writeCases(t) {
		if c.Rules.PortMaps != nil && c.Rules.PortMaps.ExternalSetMarkChain != "" {
			continue // the external chain is the node's, made by primeNAT
		}
		t.Run(c.Name, func(t *testing.T) {
			wantSave, wantDump := writtenIn(t, false, newLegacy(""), c.Owner, c.Rules)
			gotSave, gotDump := writtenIn(t, false, &nft{}, c.Owner, c.Rules)
			if gotSave != wantSave || gotDump != wantDump {
				t.Errorf("after the netlink write into no table nat:\n%s%s\nwant (iptables-restore):\n%s%s", gotSave, gotDump, wantSave, wantDump)
			}
			if strings.Contains(gotSave, "incompatible") || !strings.Contains(gotSave, "-j CNIS-") {
				t.Errorf("iptables-save does not read the jumps:\n%s", gotSave)
			}
		})
	}
}

// rewrite is an owner's rules changed: Ensure of old, then of new.
type rewrite struct {
	name     string
	o        fwapi.Owner
	old, new fwapi.Rules
}

// rewriteCases move an address, drop a family or an address, drop all,
// change the mappings, and turn to an external mark chain.
func rewriteCases(t *testing.T) []rewrite {
	masq := func(addrs ...string) fwapi.Rules {
		var r fwapi.Rules
		for _, a := range addrs {
			r.Masq = append(r.Masq, fwapi.Masq{Addr: *fwtest.CIDR(t, a)})
		}
		return r
	}
	return []rewrite{
		{"masq_moved", fwtest.BridgeOwner, masq("10.88.0.2/16", "fd00:88::2/64"), masq("10.88.0.3/16", "fd00:88::3/64")},
		{"masq_v6_dropped", fwtest.BridgeOwner, masq("10.88.0.2/16", "fd00:88::2/64"), masq("10.88.0.2/16")},
		{"masq_one_of_two", fwtest.BridgeOwner, masq("10.88.0.2/16", "10.99.0.2/16"), masq("10.99.0.2/16")},
		{"masq_none", fwtest.BridgeOwner, masq("10.88.0.2/16"), fwapi.Rules{}},
		{"portmap_changed", fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {}),
			fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6, p.Mappings = nil, p.Mappings[:1] })},
		{"portmap_external_mark", fwtest.PortOwner, fwtest.PortRules(t, func(*fwapi.PortMaps) {}),
			fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ExternalSetMarkChain = "KUBE-MARK-MASQ" })},
	}
}

// TestNetlinkRewriteMatchesRestore: rewriting an owner's chains over
// netlink (moved address, changed mappings, a family dropped) leaves what
// iptables-restore writes for the new rules alone: no stale jump or chain.
func TestNetlinkRewriteMatchesRestore(t *testing.T) {
	userns.RequireStateDirs(t)
	for _, tc := range rewriteCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			wantSave, wantDump := written(t, newLegacy(""), tc.o, tc.new)
			gotSave, gotDump := written(t, &nft{}, tc.o, tc.old, tc.new)
			if gotSave != wantSave {
				t.Errorf("iptables-save after the netlink rewrite:\n%s\nwant (iptables-restore of the new rules):\n%s", gotSave, wantSave)
			}
			if gotDump != wantDump {
				t.Errorf("rules dumped after the netlink rewrite:\n%s\nwant:\n%s", gotDump, wantDump)
			}
		})
	}
}

// TestIptablesDeletesNetlinkRules: iptables -D with the spec of each rule
// and jump deletes what Ensure wrote over netlink; -F and -X then work.
func TestIptablesDeletesNetlinkRules(t *testing.T) {
	userns.RequireStateDirs(t)
	cases := map[fwapi.Owner]fwapi.Rules{
		fwtest.PortOwner: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.Mappings = append(p.Mappings, fwapi.PortMapping{HostPort: 9090, ContainerPort: 90, Protocol: "sctp"})
		}),
		fwtest.BridgeOwner: {Masq: []fwapi.Masq{{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}, {Addr: *fwtest.CIDR(t, "fd00:88::2/64")}}},
	}
	inNS(t, func() {
		primeNAT(t)
		b := withWriter(&nft{}) // netlink alone
		for o, r := range cases {
			if err := b.Ensure(context.Background(), o, r); err != nil {
				t.Fatalf("Ensure(%s): %v", o, err)
			}
		}
		for o, r := range cases {
			for _, f := range families {
				deleteWithIptables(t, f.String(), o, natchain.Desired(o, r, f.v4))
			}
		}
		if save := saveNAT(t); strings.Contains(save, "CNIS-") {
			t.Errorf("owner chains left after iptables -D, -F, -X:\n%s", save)
		}
	})
}

func deleteWithIptables(t *testing.T, cmd string, o fwapi.Owner, chains []natchain.Chain) {
	t.Helper()
	run := func(args ...string) {
		t.Helper()
		args = append([]string{"-w", "-t", "nat"}, args...)
		if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, out)
		}
	}
	for _, c := range chains {
		for _, j := range natchain.ChainJumps(o, c) {
			run(append([]string{"-D", j.Parent}, j.Rule...)...)
		}
		for _, r := range c.Rules {
			run(append([]string{"-D", c.Name}, r...)...)
		}
	}
	for _, c := range chains {
		run("-F", c.Name)
		run("-X", c.Name)
	}
}

// TestNetlinkLifecycle: a second Ensure of the same rules writes nothing,
// Check passes after a netlink write and fails once a rule is deleted,
// and Remove leaves nothing of the owner.
func TestNetlinkLifecycle(t *testing.T) {
	userns.RequireStateDirs(t)
	ctx := context.Background()
	r := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	inNS(t, func() {
		primeNAT(t)
		b := withWriter(&nft{}) // netlink alone
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		first := fwtest.RulesetHandles(t)
		if err := b.Ensure(ctx, fwtest.PortOwner, r); err != nil {
			t.Fatalf("Ensure #2: %v", err)
		}
		if again := fwtest.RulesetHandles(t); again != first {
			t.Errorf("a second Ensure of the same rules wrote:\n--- before\n%s\n--- after\n%s", first, again)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); err != nil {
			t.Errorf("Check after a netlink write: %v", err)
		}
		chain := natchain.ChainName(natchain.PrefixDNAT, fwtest.PortOwner)
		if out, err := exec.Command("iptables", "-w", "-t", "nat", "-D", chain, "1").CombinedOutput(); err != nil {
			t.Fatalf("iptables -D %s 1: %v: %s", chain, err, out)
		}
		if err := b.Check(ctx, fwtest.PortOwner, r); !errors.Is(err, fwapi.ErrMissing) {
			t.Errorf("Check after a rule was deleted = %v, want fwapi.ErrMissing", err)
		}
		if err := b.Remove(ctx, fwtest.PortOwner); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if save := saveNAT(t); strings.Contains(save, "CNIS-") {
			t.Errorf("Remove left owner rules:\n%s", save)
		}
	})
}
