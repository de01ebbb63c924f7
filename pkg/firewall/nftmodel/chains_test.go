package nftmodel

import (
	"net"
	"strings"
	"testing"
)

// TestElemKeys checks the key encoding of each map against nft's.
func TestElemKeys(t *testing.T) {
	tests := []struct {
		table Table
		el    Elem
		want  string
	}{
		{Masq4, Elem{Set: "sources", Key: "10.88.0.2"}, "0a580002"},
		{Port4, Elem{Set: "ports", Key: "tcp . 8080"}, "06000000" + "1f900000"},
		{Port4, Elem{Set: "hostip_ports", Key: "192.0.2.10 . udp . 53"}, "c000020a" + "11000000" + "00350000"},
		{Port6, Elem{Set: "hairpins", Key: "fd00::2 . sctp . 80"}, "fd000000000000000000000000000002" + "84000000" + "00500000"},
		{Spoof, Elem{Set: "ifaces", Key: `"veth1"`}, "7665746831" + strings.Repeat("00", 11)},
		{IsoBridge, Elem{Set: "icc_to", Key: `"veth1"`}, "7665746831" + strings.Repeat("00", 11)},
		{IsoInet, Elem{Set: "icc_addrs4", Key: "10.88.0.2"}, "0a580002"},
		{IsoInet, Elem{Set: "icc_addrs6", Key: "fd00::2"}, "fd000000000000000000000000000002"},
	}
	for _, tc := range tests {
		got, err := ElemKey(tc.table, tc.el)
		if err != nil || net.HardwareAddr(got).String() != net.HardwareAddr(hexBytes(t, tc.want)).String() {
			t.Errorf("ElemKey(%s, %v) = %x, %v; want %s", tc.table, tc.el, got, err, tc.want)
		}
	}
	if _, err := ElemKey(Port4, Elem{Set: "ports", Key: "tcp . 99999"}); err == nil {
		t.Error("nftElemKey accepted port 99999")
	}
	if _, err := ElemKey(IsoInet, Elem{Set: "icc_addrs4", Key: "fd00::2"}); err == nil {
		t.Error("ElemKey put an IPv6 address in icc_addrs4")
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

func TestParseNFTComment(t *testing.T) {
	r := Rule{Text: "tcp dport 1 dnat to 10.0.0.1:2", Elem: &Elem{Set: "ports", Key: "tcp . 1"}}
	d, el, ok := ParseComment(r.Comment())
	if !ok || el == nil || *el != *r.Elem || len(d) != 8 {
		t.Errorf("ParseComment(%q) = %q, %v, %v", r.Comment(), d, el, ok)
	}
	// Interface keys go bare into comments and come back quoted, in every
	// map keyed by interface name.
	for _, set := range []string{"ifaces", "icc_from", "icc_to", "iso_from", "iso_to", "iso_into", "ingress"} {
		r := Rule{Text: "drop", Elem: &Elem{Set: set, Key: `"cni0"`}}
		if _, el, ok := ParseComment(r.Comment()); !ok || el == nil || *el != *r.Elem {
			t.Errorf("ParseComment(%q) = %v, %v, want %v", r.Comment(), el, ok, *r.Elem)
		}
	}
	if _, _, ok := ParseComment("ctr1"); ok {
		t.Errorf("ParseComment(%q) accepted a foreign comment", "ctr1")
	}
}
