package natchain

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
	"cnisuite/test/nftfake"
)

// encodeCases are the owners and rules of table nat: every case of the
// shared golden files that the iptables backend writes in table nat
// (masquerade, SNAT, port mappings of every shape, user conditions), and
// a few more shapes.
func encodeCases(t *testing.T) []fwtest.Case {
	var out []fwtest.Case
	for _, c := range fwtest.RuleCases(t) {
		if (c.Rules.Masq != nil || c.Rules.PortMaps != nil) && !strings.HasSuffix(c.Name, "_nft") {
			out = append(out, c)
		}
	}
	return append(out,
		fwtest.Case{Name: "masq_two_v4", Owner: fwtest.BridgeOwner, Rules: fwapi.Rules{Masq: []fwapi.Masq{
			{Addr: *fwtest.CIDR(t, "10.88.0.2/16")}, {Addr: *fwtest.CIDR(t, "10.99.0.2/20")}}}},
		fwtest.Case{Name: "portmap_sctp_v4", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV6 = nil
			p.Mappings = []fwapi.PortMapping{
				{HostPort: 9090, ContainerPort: 90, Protocol: "sctp", HostIP: net.ParseIP("192.0.2.10")},
				{HostPort: 7000, ContainerPort: 7000, Protocol: "sctp", Range: 11},
			}
		})},
	)
}

// encodedRule is one rule of an owner's chain or a jump into one, with its
// chain (parent for a jump) and its iptables-nft encoding.
type encodedRule struct {
	chain string
	rule  Rule
	x     Encoded
	err   error
}

// encodedRules encodes every rule and jump of an owner's chains in the
// family, in the order the restore payload writes them.
func encodedRules(o fwapi.Owner, r fwapi.Rules, v4 bool) []encodedRule {
	var out []encodedRule
	for _, c := range Desired(o, r, v4) {
		for _, rule := range c.Rules {
			x, err := Encode(rule, v4)
			out = append(out, encodedRule{chain: c.Name, rule: rule, x: x, err: err})
		}
		for _, j := range ChainJumps(o, c) {
			x, err := Encode(j.Rule, v4)
			out = append(out, encodedRule{chain: j.Parent, rule: j.Rule, x: x, err: err})
		}
	}
	return out
}

// TestEncodingGolden pins, for every kind of rule of table nat, the
// tokens as iptables-restore reads them (the payload Ensure writes on a
// node with none yet, docs/formats.md "In the kernel: iptables") and the
// expressions the iptables-nft netlink writer sends for each rule, as
// iptables-nft 1.8.9 encodes it (TestNetlinkWriteMatchesRestore in
// package iptables holds the kernel to the same); a rule with user
// conditions is not encodable and goes to iptables-restore.
func TestEncodingGolden(t *testing.T) {
	for _, c := range encodeCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString(Payloads(c.Owner, c.Rules))
			for _, v4 := range []bool{true, false} {
				rules := encodedRules(c.Owner, c.Rules, v4)
				if len(rules) > 0 {
					fmt.Fprintf(&b, "# iptables-nft expressions, %s\n", map[bool]string{true: "ip nat", false: "ip6 nat"}[v4])
				}
				for _, e := range rules {
					fmt.Fprintf(&b, "-A %s %s\n", e.chain, e.rule)
					if e.err != nil {
						if !errors.Is(e.err, ErrUnsupported) || !HasConditions(c.Rules, v4) {
							t.Errorf("Encode(%q) = %v: only rules with user conditions may be unsupported", e.rule, e.err)
						}
						b.WriteString("\tnot encodable: written by iptables-restore\n")
						continue
					}
					fmt.Fprintf(&b, "\tproto %d comment %q jump %q source %x\n", e.x.Proto, e.x.Comment, e.x.Jump, e.x.Source)
					for _, x := range e.x.Exprs {
						fmt.Fprintf(&b, "\t%s\n", exprText(x))
					}
				}
			}
			golden.Check(t, c.Name, b.String())
		})
	}
}

// exprText renders an expression with every field the encoding sets; an
// xt info with its trailing zero bytes counted, not written.
func exprText(e expr.Any) string {
	switch x := e.(type) {
	case *expr.Meta:
		return fmt.Sprintf("meta load key %d => reg %d", x.Key, x.Register)
	case *expr.Cmp:
		return fmt.Sprintf("cmp op %d reg %d %x", x.Op, x.Register, x.Data)
	case *expr.Payload:
		return fmt.Sprintf("payload load base %d offset %d len %d => reg %d", x.Base, x.Offset, x.Len, x.DestRegister)
	case *expr.Bitwise:
		return fmt.Sprintf("bitwise reg %d => reg %d len %d mask %x xor %x", x.SourceRegister, x.DestRegister, x.Len, x.Mask, x.Xor)
	case *expr.Range:
		return fmt.Sprintf("range op %d reg %d %x-%x", x.Op, x.Register, x.FromData, x.ToData)
	case *expr.Counter:
		return fmt.Sprintf("counter %d %d", x.Packets, x.Bytes)
	case *expr.Verdict:
		return fmt.Sprintf("verdict %d %q", x.Kind, x.Chain)
	case *expr.Match:
		return fmt.Sprintf("match %s rev %d info %s", x.Name, x.Rev, infoText(x.Info))
	case *expr.Target:
		return fmt.Sprintf("target %s rev %d info %s", x.Name, x.Rev, infoText(x.Info))
	}
	return fmt.Sprintf("%T %+v", e, e)
}

func infoText(i xt.InfoAny) string {
	u, ok := i.(*xt.Unknown)
	if !ok {
		return fmt.Sprintf("%T", i)
	}
	b := []byte(*u)
	trimmed := strings.TrimRight(hex.EncodeToString(b), "0")
	if len(trimmed)%2 == 1 {
		trimmed += "0"
	}
	return fmt.Sprintf("%s +%d zero bytes (%d)", trimmed, len(b)-len(trimmed)/2, len(b))
}

// TestEncodedReadsBack: each encoded rule, sent to nftfake and dumped
// back, reads back through our own decoding as what was encoded: the same
// expressions, comment and jump (netfilter.Rule), source (DumpedSource,
// which the iptables-nft writer matches jumps by) and, for a DNAT rule,
// the mapping DumpedDNAT reads over netlink equal to the one ParseDNAT
// reads from the rule as `iptables -S` prints it. The fake keeps the
// expressions as sent and does not check the xt payloads as the kernel
// does: that is TestNetlinkWriteMatchesRestore's (package iptables).
func TestEncodedReadsBack(t *testing.T) {
	for _, c := range encodeCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			for _, v4 := range []bool{true, false} {
				readsBack(t, c, v4)
			}
		})
	}
}

func readsBack(t *testing.T, c fwtest.Case, v4 bool) {
	t.Helper()
	rules := encodedRules(c.Owner, c.Rules, v4)
	if len(rules) == 0 {
		return
	}
	tab := netfilter.Table{Family: "ip6", Name: "nat"}
	if v4 {
		tab.Family = "ip"
	}
	fake := nftfake.New()
	conn := fake.Conn()
	defer conn.Close()
	batch := &netfilter.Batch{}
	batch.AddTable(tab)
	for _, name := range append(slices.Clone(Parents), append(OwnerChains(c.Owner), "KUBE-MARK-MASQ")...) {
		batch.AddChain(tab, name, nil)
	}
	var sent []encodedRule
	for _, e := range rules {
		if e.err == nil {
			batch.AddXTRule(tab, e.chain, e.x.Exprs, e.x.Proto)
			sent = append(sent, e)
		}
	}
	if err := conn.Apply(batch); err != nil {
		t.Fatalf("applying the encoded rules: %v", err)
	}
	got := map[string][]netfilter.Rule{}
	for _, name := range append(slices.Clone(Parents), OwnerChains(c.Owner)...) {
		rs, err := conn.Rules(tab.Proto(), "nat", name)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = rs
	}
	for _, e := range sent {
		if len(got[e.chain]) == 0 {
			t.Fatalf("%s: rule %q not read back", e.chain, e.rule)
		}
		r := got[e.chain][0]
		got[e.chain] = got[e.chain][1:]
		checkReadBack(t, e, r, v4)
	}
}

func checkReadBack(t *testing.T, e encodedRule, r netfilter.Rule, v4 bool) {
	t.Helper()
	if r.Comment != e.x.Comment || r.Jump != e.x.Jump {
		t.Errorf("%q read back with comment %q, jump %q; want %q, %q", e.rule, r.Comment, r.Jump, e.x.Comment, e.x.Jump)
	}
	if src := DumpedSource(r.Exprs, v4); string(src) != string(e.x.Source) {
		t.Errorf("DumpedSource of %q = %x, want %x", e.rule, src, e.x.Source)
	}
	var want, have []string
	for _, x := range e.x.Exprs {
		want = append(want, exprText(x))
	}
	for _, x := range decodeExprs(t, r.Exprs, v4) {
		have = append(have, exprText(x))
	}
	if !slices.Equal(have, want) {
		t.Errorf("%q read back as\n%s\nwant\n%s", e.rule, strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	m, isDNAT := DumpedDNAT(r.Exprs, v4)
	pm, parsedDNAT := ParseDNAT(e.rule.String())
	if isDNAT != parsedDNAT {
		t.Errorf("%q: DumpedDNAT says DNAT %v, ParseDNAT %v", e.rule, isDNAT, parsedDNAT)
	}
	if !isDNAT {
		return
	}
	nl := fwapi.PortMapping{HostPort: m.Port, Protocol: m.Protocol, HostIP: m.Host}
	if m.Last > m.Port {
		nl.Range = m.Last - m.Port + 1
	}
	if fmt.Sprint(nl) != fmt.Sprint(pm) {
		t.Errorf("%q: DumpedDNAT reads %v, ParseDNAT %v", e.rule, nl, pm)
	}
}

// decodeExprs decodes a dumped rule's expressions of the kinds Encode
// writes: the native ones with google/nftables, an xt match or target as
// its name, revision and info bytes.
func decodeExprs(t *testing.T, exprs []byte, v4 bool) []expr.Any {
	t.Helper()
	family := byte(unix.NFPROTO_IPV6)
	if v4 {
		family = unix.NFPROTO_IPV4
	}
	var out []expr.Any
	for _, raw := range netfilter.RawExprs(exprs) {
		var e expr.Any
		switch raw.Name {
		case "meta":
			e = &expr.Meta{}
		case "cmp":
			e = &expr.Cmp{}
		case "payload":
			e = &expr.Payload{}
		case "bitwise":
			e = &expr.Bitwise{}
		case "range":
			e = &expr.Range{}
		case "counter":
			e = &expr.Counter{}
		case "immediate":
			e = &expr.Verdict{}
		case "match", "target":
			out = append(out, decodeXT(t, raw))
			continue
		default:
			t.Fatalf("expression %q: not one Encode writes", raw.Name)
		}
		if err := expr.Unmarshal(family, raw.Data, e); err != nil {
			t.Fatalf("decoding %s: %v", raw.Name, err)
		}
		out = append(out, e)
	}
	return out
}

// decodeXT reads NFTA_MATCH_NAME, _REV and _INFO (a target's attributes
// are numbered alike).
func decodeXT(t *testing.T, raw netfilter.RawExpr) expr.Any {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	ad.ByteOrder = binary.BigEndian
	var name string
	var rev uint32
	var info xt.Unknown
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_MATCH_NAME:
			name = ad.String()
		case unix.NFTA_MATCH_REV:
			rev = ad.Uint32()
		case unix.NFTA_MATCH_INFO:
			info = xt.Unknown(ad.Bytes())
		}
	}
	if raw.Name == "target" {
		return &expr.Target{Name: name, Rev: rev, Info: &info}
	}
	return &expr.Match{Name: name, Rev: rev, Info: &info}
}
