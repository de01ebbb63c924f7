package firewall

import (
	"fmt"
	"net"

	"github.com/google/nftables/expr"
)

// nftHook makes a chain a base chain.
type nftHook struct {
	kind string // filter, nat
	num  uint32 // NF_INET_* (NF_BR_* for bridge: same numbers)
	prio int32
	text string // as nft writes it
}

// nftBase is a fixed chain of a table with its fixed rules.
type nftBase struct {
	name  string
	hook  *nftHook
	rules []nftRule
}

// nftSkel is a table with its maps and fixed chains. Ensure writes it
// only when a reader finds it not intact: rewriting it deletes rules, and a
// transaction that deletes anything costs the next close of a netfilter
// socket an RCU grace period.
type nftSkel struct {
	table  nftTable
	maps   []nftMap
	chains []nftBase
}

var (
	hookPrerouting = func(kind string, prio int32, text string) *nftHook {
		return &nftHook{kind: kind, num: 0, prio: prio, text: "type " + kind + " hook prerouting priority " + text + "; policy accept;"}
	}
	hookOutputNAT  = &nftHook{kind: "nat", num: 3, prio: -100, text: "type nat hook output priority -100; policy accept;"}
	hookSrcNAT     = &nftHook{kind: "nat", num: 4, prio: 100, text: "type nat hook postrouting priority srcnat; policy accept;"}
	localnetGuardT = nftTable{"ip", "cnisuite_localnet"}
)

// nftSkeleton returns the skeleton of one of our tables.
func nftSkeleton(t nftTable) nftSkel {
	v4 := t.family == "ip"
	ip := "ip"
	if !v4 {
		ip = "ip6"
	}
	switch t.name {
	case nftMasq4.name:
		return nftSkel{table: t, maps: []nftMap{nftMaps["sources"]}, chains: []nftBase{{
			name: "postrouting", hook: hookSrcNAT,
			rules: []nftRule{{text: ip + " saddr vmap @sources",
				exprs: exprVmap("sources", loadNH(saddrOff(v4), addrLen(v4), reg1))}},
		}}}
	case nftPort4.name:
		return nftPortSkeleton(t, v4, ip)
	case nftSpoof.name:
		return nftSkel{table: t, maps: []nftMap{nftMaps["ifaces"]}, chains: []nftBase{{
			name: "prerouting", hook: hookPrerouting("filter", -300, "-300"),
			rules: []nftRule{{text: "iifname vmap @ifaces",
				exprs: exprVmap("ifaces", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg1})}},
		}}}
	}
	return nftSkel{table: t}
}

// nftPortSkeleton is the portmap table: only traffic addressed to the node
// itself (fib daddr type local) reaches the host-port maps.
func nftPortSkeleton(t nftTable, v4 bool, ip string) nftSkel {
	toHostports := nftRule{text: "fib daddr type local jump hostports", exprs: []expr.Any{
		&expr.Fib{Register: reg1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: hostReg(2)}, // RTN_LOCAL
		&expr.Verdict{Kind: expr.VerdictJump, Chain: "hostports"},
	}}
	ctDNAT := []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: hostReg(0x20), Xor: hostReg(0)}, // IPS_DST_NAT
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: hostReg(0)},
	}
	return nftSkel{
		table: t,
		maps:  []nftMap{nftMaps["hostip_ports"], nftMaps["ports"], nftMaps["hairpins"]},
		chains: []nftBase{
			{name: "prerouting", hook: hookPrerouting("nat", -100, "dstnat"), rules: []nftRule{toHostports}},
			{name: "output", hook: hookOutputNAT, rules: []nftRule{toHostports}},
			{name: "hostports", rules: []nftRule{
				{text: ip + " daddr . meta l4proto . th dport vmap @hostip_ports", exprs: exprVmap("hostip_ports", exprConcatKey(v4, true)...)},
				{text: "meta l4proto . th dport vmap @ports", exprs: exprVmap("ports", exprConcatKey(v4, false)...)},
			}},
			{name: "masquerading", hook: hookSrcNAT, rules: []nftRule{{
				text:  "ct status dnat " + ip + " daddr . meta l4proto . th dport vmap @hairpins",
				exprs: append(ctDNAT, exprVmap("hairpins", exprConcatKey(v4, true)...)...),
			}}},
		},
	}
}

// nftLocalnetSkel drops packets to 127.0.0.0/8 that arrive from any
// interface but lo, before DNAT. route_localnet=1 (needed for
// 127.0.0.1:hostPort) would otherwise let neighbours reach services bound
// to the node's loopback (the CVE-2020-8558 class). Node-wide and constant.
func nftLocalnetSkel() nftSkel {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	return nftSkel{table: localnetGuardT, chains: []nftBase{{
		name: "prerouting", hook: hookPrerouting("filter", -150, "-150"),
		rules: []nftRule{{text: `iifname != "lo" ip daddr 127.0.0.0/8 drop`, exprs: concat(
			[]expr.Any{
				&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg1},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: append([]byte("lo"), make([]byte, 14)...)},
			},
			exprAddr(true, daddrOff(true), loopback, expr.CmpOpEq),
			[]expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}},
		)}},
	}}}
}

// lines renders the skeleton as nft commands. Running them again changes
// nothing but rewrites the fixed rules.
func (s nftSkel) lines() []string {
	ts := s.table.String()
	out := []string{"add table " + ts}
	for _, m := range s.maps {
		out = append(out, fmt.Sprintf("add map %s %s { type %s : verdict; }", ts, m.name, m.text(s.table)))
	}
	for _, c := range s.chains {
		if c.hook != nil {
			out = append(out, fmt.Sprintf("add chain %s %s { %s }", ts, c.name, c.hook.text))
		} else {
			out = append(out, "add chain "+ts+" "+c.name)
		}
	}
	for _, c := range s.chains {
		out = append(out, "flush chain "+ts+" "+c.name)
		for _, r := range c.rules {
			out = append(out, "add rule "+ts+" "+c.name+" "+r.text)
		}
	}
	return out
}
