package nftmodel

import (
	"fmt"
	"net"

	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
)

// Hook makes a chain a base chain.
type Hook struct {
	netfilter.Hook
	Text string // as nft writes it
}

// Base is a fixed chain of a table with its fixed rules.
type Base struct {
	Name  string
	Hook  *Hook
	Rules []Rule
}

// Skeleton is a table with its maps and fixed chains. Ensure writes it
// only when a reader finds it not intact: rewriting it deletes rules, and a
// transaction that deletes anything costs the next close of a netfilter
// socket an RCU grace period.
type Skeleton struct {
	Table  Table
	Maps   []Map
	Chains []Base
}

// HookPrerouting is a prerouting hook of the given chain type and priority
// (priority text as nft writes it: "dstnat", "-300").
func HookPrerouting(kind string, prio int32, text string) *Hook {
	return &Hook{Hook: netfilter.Hook{Type: kind, Num: 0, Prio: prio},
		Text: "type " + kind + " hook prerouting priority " + text + "; policy accept;"}
}

// The nat hooks of output and postrouting.
var (
	HookOutputNAT = &Hook{Hook: netfilter.Hook{Type: "nat", Num: 3, Prio: -100},
		Text: "type nat hook output priority -100; policy accept;"}
	HookSrcNAT = &Hook{Hook: netfilter.Hook{Type: "nat", Num: 4, Prio: 100},
		Text: "type nat hook postrouting priority srcnat; policy accept;"}
)

// LocalnetGuardTable holds the localnet guard.
var LocalnetGuardTable = Table{Family: "ip", Name: "cnisuite_localnet"}

// LocalnetGuard drops packets to 127.0.0.0/8 that arrive from any
// interface but lo, before DNAT. route_localnet=1 (needed for
// 127.0.0.1:hostPort) would otherwise let neighbours reach services bound
// to the node's loopback (the CVE-2020-8558 class). Node-wide and constant;
// both backends put it in place (fwapi.Rules.NeedsLocalnetGuard).
func LocalnetGuard() Skeleton {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	return Skeleton{Table: LocalnetGuardTable, Chains: []Base{{
		Name: "prerouting", Hook: HookPrerouting("filter", -150, "-150"),
		Rules: []Rule{Build(nil, nftrule.IfName(true, "lo", true), nftrule.Prefix(true, "daddr", loopback, false), nftrule.Drop)},
	}}}
}

// Lines renders the skeleton as nft commands. Running them again changes
// nothing but rewrites the fixed rules.
func (s Skeleton) Lines() []string {
	ts := s.Table.String()
	out := []string{"add table " + ts}
	for _, m := range s.Maps {
		flags, kind := "", "map"
		if m.Interval {
			flags = " flags interval;"
		}
		if m.IsSet {
			kind = "set"
		}
		out = append(out, fmt.Sprintf("add %s %s %s { type %s;%s }", kind, ts, m.Name, m.Text(s.Table), flags))
	}
	for _, c := range s.Chains {
		if c.Hook != nil {
			out = append(out, fmt.Sprintf("add chain %s %s { %s }", ts, c.Name, c.Hook.Text))
		} else {
			out = append(out, "add chain "+ts+" "+c.Name)
		}
	}
	for _, c := range s.Chains {
		out = append(out, "flush chain "+ts+" "+c.Name)
		for _, r := range c.Rules {
			out = append(out, "add rule "+ts+" "+c.Name+" "+r.Text)
		}
	}
	return out
}
