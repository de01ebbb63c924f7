package nftrule

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
)

// TestSetRenderings: each set's nft text and kernel elements, without
// root (TestNetlinkMatchesScript in package nftables proves the kernel
// lists them as nft writes them).
func TestSetRenderings(t *testing.T) {
	tests := []struct {
		set      Set
		text     string
		elems    string // hex keys, "/" after an interval's end key
		interval bool
	}{
		{Set{"ipv4_addr", []string{"10.88.0.3", "0.0.0.0"}}, "{ 0.0.0.0, 10.88.0.3 }", "00000000 0a580003", false},
		{Set{"ipv6_addr", []string{"fd00::2", "::", "fe80::/10"}}, "{ ::, fd00::2, fe80::/10 }",
			"00000000000000000000000000000000 00000000000000000000000000000001/ " +
				"fd000000000000000000000000000002 fd000000000000000000000000000003/ " +
				"fe800000000000000000000000000000 fec00000000000000000000000000000/", true},
		{Set{"ipv6_addr", []string{"fd00::3", "fd00::2", "ffff::/16"}}, "{ fd00::2, fd00::3, ffff::/16 }",
			"fd000000000000000000000000000002 fd000000000000000000000000000004/ ffff0000000000000000000000000000", true},
		{Set{"ifname", []string{"eth0", "br0"}}, `{ "br0", "eth0" }`,
			"62723000000000000000000000000000 65746830000000000000000000000000", false},
	}
	for _, tc := range tests {
		if got := tc.set.Text(); got != tc.text {
			t.Errorf("Text() = %s, want %s", got, tc.text)
		}
		elems, interval, err := tc.set.elems()
		if err != nil {
			t.Fatalf("elems(%v): %v", tc.set, err)
		}
		var keys []string
		for _, e := range elems {
			k := hex.EncodeToString(e.Key)
			if e.End {
				k += "/"
			}
			keys = append(keys, k)
		}
		if got := strings.Join(keys, " "); got != tc.elems || interval != tc.interval {
			t.Errorf("elems(%s) = %s (interval %v), want %s (%v)", tc.text, got, interval, tc.elems, tc.interval)
		}
	}
}

// TestInSetOfOne: a set of one address is the comparison nft writes for
// it; any other set is a lookup.
func TestInSetOfOne(t *testing.T) {
	m, sets := inSet(Set{"ipv4_addr", []string{"10.88.0.2"}}, true, 0)
	if c, ok := m[0].(*expr.Cmp); !ok || c.Op != expr.CmpOpNeq || hex.EncodeToString(c.Data) != "0a580002" || sets != nil {
		t.Errorf("inSet(one address) = %#v, %v; want cmp neq 0a580002 and no set", m[0], sets)
	}
	m, sets = inSet(Set{"ipv6_addr", []string{"fe80::/10"}}, true, 0)
	if l, ok := m[0].(*expr.Lookup); !ok || !l.Invert || len(sets) != 1 {
		t.Errorf("inSet(a prefix) = %#v, %v; want an inverted lookup in one set", m[0], sets)
	}
}
