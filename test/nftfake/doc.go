// Package nftfake is a semantic fake of the kernel's nftables, for tests
// that run without root: an in-memory ruleset that a netfilter.Conn talks
// to instead of a netlink socket. It decodes the messages the Conn sends
// (the attributes the kernel parses), applies each transaction as the
// kernel does, and answers gets and dumps in the kernel's encoding, so
// the code under test runs its own encoders and decoders, and its logic
// meets the kernel's answers: it is not a mock replaying expectations.
//
// What it holds: tables; chains with their hook, priority and policy;
// rules with their expressions and user data as sent; sets and maps with
// their flags, key and data types, and elements (key, key end, verdict or
// data, comment); anonymous sets bound to the rule that reads them.
//
// What it does as the kernel does: a transaction applies all of its
// messages or none, and answers each refused one with its errno (then
// the ack asked of the last); handles are given per table, increasing,
// and not taken back when a transaction fails; NLM_F_EXCL on an existing
// table, chain, set or element is EEXIST, as is an element that maps to
// something else or whose range overlaps another's; deleting a missing
// rule, chain or element is ENOENT; deleting a chain deletes its rules,
// and is EBUSY while a jump, goto or map element leads to it; a rule or
// element jumping to a missing chain is ENOENT; chain use counts are the
// kernel's (rules, plus the jumps, gotos and map elements leading to the
// chain); rules added with echo come back with their handles.
//
// What it does not: it runs no packet through the rules, checks no
// expression other than what it refers to (the chain of a verdict, the
// set of a lookup: not, for one, that a register is loaded before it is
// read, which Linux 6.18 refuses with ENODATA), and dumps a rule's expressions as they were sent,
// where the kernel dumps its own encoding of them (equal for what
// netfilter.ParseExprs reads, but not byte for byte: a lookup of an
// anonymous set names it by its ID, not as "__set0"). The privileged
// differential test (differential_linux_test.go) runs the same batches
// against the kernel and the fake and compares their answers.
//
// Faults for tests: FailNext makes the next transaction fail as a commit
// does; FailReads makes every read fail (EPERM: what a caller without
// CAP_NET_ADMIN gets); After runs a function between two calls of the code
// under test, such as DeleteTable to make a table vanish between a read
// and a write.
//
// A test of another package hands the code under test a Conn over a
// Fake where the code would use netfilter.Dial()'s, and asserts on what
// the Conn's own dumps read, or on Dump's text:
//
//	func TestEnsureAddsTheJump(t *testing.T) {
//		fake := nftfake.New()
//		conn := fake.Conn()
//		defer conn.Close()
//		tab := netfilter.Table{Family: "ip", Name: "t"}
//		b := &netfilter.Batch{}
//		b.AddTable(tab)
//		b.AddChain(tab, "c", nil)
//		if err := conn.Apply(b); err != nil { // or the code under test, given conn
//			t.Fatal(err)
//		}
//		if ok, _ := conn.ChainExists(tab.Proto(), "t", "c"); !ok {
//			t.Errorf("chain c missing; the ruleset:\n%s", fake.Dump())
//		}
//	}
package nftfake
