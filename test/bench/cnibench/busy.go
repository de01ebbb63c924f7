package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// BusyNode is a chain's ADD on a node holding many kube-proxy-style NAT
// rules, against the same run without them.
type BusyNode struct {
	Chain      string  `json:"chain"`
	Rules      int     `json:"rules"`
	N          int     `json:"n"`
	QuietAddMS float64 `json:"quiet_add_ms"`
	BusyAddMS  float64 `json:"busy_add_ms"`
}

// busyNode measures each chain at n containers without, then with, the
// busy rules in place (both kinds at once, as on a node where kube-proxy
// and other agents use both).
func (rep *report) busyNode(o *options, floorDir string, floor *chain, ours []*chain) error {
	if o.busyRules == 0 {
		return nil
	}
	n := min(o.busyN, len(floor.netnses))
	for _, c := range ours {
		b := &BusyNode{Chain: c.name, Rules: o.busyRules, N: n}
		for _, busy := range []bool{false, true} {
			if busy {
				fmt.Fprintf(os.Stderr, "cnibench: loading %d kube-proxy-style NAT rules (iptables and nftables)...\n", o.busyRules)
				if err := loadBusyRules(o.busyRules); err != nil {
					return err
				}
			}
			err := rep.sequential(o, floorDir, []*chain{floor, c}, n)
			s := rep.Scenarios[len(rep.Scenarios)-1]
			s.Chain += map[bool]string{false: " (busy-node pair, quiet)", true: fmt.Sprintf(" (%d NAT rules)", o.busyRules)}[busy]
			if busy {
				b.BusyAddMS = s.Verbs["add"].Median
				err = joinErr(err, unloadBusyRules())
			} else {
				b.QuietAddMS = s.Verbs["add"].Median
			}
			if err != nil {
				return err
			}
		}
		rep.Busy = append(rep.Busy, b)
	}
	return nil
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadBusyRules writes n DNAT rules into a KUBE-SERVICES-like chain of the
// iptables nat table, jumped to from PREROUTING and OUTPUT, and the same
// in an nftables table named as kube-proxy's in nftables mode (ip
// kube-proxy): a chain without backend keys then takes nftables on the busy
// node as on the quiet one (docs/operations.md), so that its ratio compares
// one backend with itself.
func loadBusyRules(n int) error {
	var ipt, nft strings.Builder
	ipt.WriteString("*nat\n:KUBE-BENCH-SERVICES - [0:0]\n-A PREROUTING -j KUBE-BENCH-SERVICES\n-A OUTPUT -j KUBE-BENCH-SERVICES\n")
	nft.WriteString("table ip kube-proxy {\n chain services {\n")
	for i := 0; i < n; i++ {
		svc, ep := fmt.Sprintf("172.30.%d.%d", i/250, 1+i%250), fmt.Sprintf("10.200.%d.%d", i/250, 1+i%250)
		fmt.Fprintf(&ipt, "-A KUBE-BENCH-SERVICES -d %s/32 -p tcp --dport 80 -j DNAT --to-destination %s:8080\n", svc, ep)
		fmt.Fprintf(&nft, "  ip daddr %s tcp dport 80 dnat to %s:8080\n", svc, ep)
	}
	ipt.WriteString("COMMIT\n")
	nft.WriteString(" }\n chain prerouting { type nat hook prerouting priority dstnat; jump services; }\n")
	nft.WriteString(" chain output { type nat hook output priority -100; jump services; }\n}\n")
	if err := pipe(ipt.String(), "iptables-restore", "--noflush", "--wait"); err != nil {
		return err
	}
	return pipe(nft.String(), "nft", "-f", "-")
}

func unloadBusyRules() error {
	script := `iptables -w -t nat -D PREROUTING -j KUBE-BENCH-SERVICES; iptables -w -t nat -D OUTPUT -j KUBE-BENCH-SERVICES;
iptables -w -t nat -F KUBE-BENCH-SERVICES; iptables -w -t nat -X KUBE-BENCH-SERVICES; nft delete table ip kube-proxy`
	return pipe("", "sh", "-c", script)
}

func pipe(stdin, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}
