package nftmodel

import (
	"testing"
)

func TestParseNFTComment(t *testing.T) {
	r := Rule{Text: "tcp dport 1 dnat to 10.0.0.1:2", Elem: &Elem{Set: "ports", Key: "tcp . 1"}}
	d, el, ok := parseComment(r.Comment())
	if !ok || el == nil || *el != *r.Elem || len(d) != 8 {
		t.Errorf("parseComment(%q) = %q, %v, %v", r.Comment(), d, el, ok)
	}
	// Interface keys go bare into comments and come back quoted, in every
	// map keyed by interface name.
	for _, set := range []string{"ifaces", "icc_from", "icc_to", "iso_from", "iso_to", "iso_into", "ingress"} {
		r := Rule{Text: "drop", Elem: &Elem{Set: set, Key: `"cni0"`}}
		if _, el, ok := parseComment(r.Comment()); !ok || el == nil || *el != *r.Elem {
			t.Errorf("parseComment(%q) = %v, %v, want %v", r.Comment(), el, ok, *r.Elem)
		}
	}
	if _, _, ok := parseComment("ctr1"); ok {
		t.Errorf("parseComment(%q) accepted a foreign comment", "ctr1")
	}
}
