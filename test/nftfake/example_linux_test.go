package nftfake_test

import (
	"fmt"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
)

// A test hands a Conn over a Fake to the code under test, then reads the
// ruleset back through the Conn or as text.
func Example() {
	fake := nftfake.New()
	conn := fake.Conn()
	defer conn.Close()
	tab := netfilter.Table{Family: "ip", Name: "t"}
	b := &netfilter.Batch{}
	b.AddTable(tab)
	b.AddChain(tab, "input", &netfilter.Hook{Type: "filter", Num: 1})
	b.AddChain(tab, "c", nil)
	b.AddSet(tab, netfilter.SetSpec{Name: "ifaces", KeyType: 41, KeyLen: 16, Verdict: true})
	b.AddElem(tab, "ifaces", []byte("eth0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "c")
	b.AddRule(tab, "input", []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictJump, Chain: "c"}}, "to c")
	if err := conn.Apply(b); err != nil {
		fmt.Println(err)
	}
	_, use, _ := conn.ChainUse(tab.Proto(), "t", "c")
	fmt.Println("use of c:", use)
	fmt.Print(fake.Dump())
	// Output:
	// use of c: 2
	// table ip t {
	// 	map ifaces { # handle 3
	// 		type 0x29 [16 bytes] : verdict;
	// 		element 65746830000000000000000000000000 : jump c
	// 	}
	// 	chain input { # handle 1 use 1
	// 		type filter hook input priority 0; policy accept;
	// 		counter immediate jump c comment "to c" # handle 4
	// 	}
	// 	chain c { # handle 2 use 2
	// 	}
	// }
}
