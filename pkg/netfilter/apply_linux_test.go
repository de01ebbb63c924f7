package netfilter

import (
	"encoding/binary"
	"errors"
	"os/exec"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"cnisuite/test/sandbox"
)

// port is a set key of type inet_service.
func port(p int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(p)) }

// TestLargeTransaction: one transaction of 11,000 messages (10,000 set
// elements and 1,000 rules echoed back) commits, says so and returns every
// echoed rule; one of 10,000 elements of which the kernel refuses the last
// (its key is held) fails with the kernel's EEXIST and commits nothing.
// Before, the first failed with EMSGSIZE (the datagram past the send
// buffer) and, below that size, the answers overflowed the socket: a wait
// of 5 s, then EAGAIN, though the kernel had committed.
func TestLargeTransaction(t *testing.T) {
	sandbox.Require(t)
	conn, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tab := Table{Family: "ip", Name: "cnisuite_bigtest"}
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "ip", tab.Name).Run() })
	b := &Batch{}
	b.AddTable(tab)
	b.AddSet(tab, SetSpec{Name: "ports", KeyType: 13 /* inet_service */, KeyLen: 2})
	for i := 1; i <= 10000; i++ {
		b.AddSetElem(tab, "ports", Elem{Key: port(i)}, true)
	}
	b.AddChain(tab, "c", nil)
	for i := 0; i < 1000; i++ {
		b.AddXTRuleEcho(tab, "c", []expr.Any{&expr.Counter{}}, 0)
	}
	echoed, err := conn.ApplyEcho(b)
	if err != nil || len(echoed) != 1000 {
		t.Fatalf("ApplyEcho(11,000 messages) = %d rules, %v; want 1000 rules echoed, success", len(echoed), err)
	}
	if elems, err := conn.MapElems(tab.Proto(), tab.Name, "ports"); err != nil || len(elems) != 10000 {
		t.Fatalf("after the transaction, the set holds %d elements (%v), want 10000", len(elems), err)
	}
	refused := &Batch{}
	for i := 10001; i < 20000; i++ {
		refused.AddSetElem(tab, "ports", Elem{Key: port(i)}, true)
	}
	refused.AddSetElem(tab, "ports", Elem{Key: port(1)}, true) // held: create element fails
	if err := conn.Apply(refused); !errors.Is(err, unix.EEXIST) {
		t.Errorf("Apply(10,000 elements, the last held) = %v, want EEXIST", err)
	}
	if elems, err := conn.MapElems(tab.Proto(), tab.Name, "ports"); err != nil || len(elems) != 10000 {
		t.Errorf("after the refused transaction, the set holds %d elements (%v), want the 10000 of before", len(elems), err)
	}
}
