package store

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// awkward holds leases whose names would break a format that split on
// spaces, tabs, quotes or newlines.
var awkward = []leaseEntry{
	{ip: net.ParseIP("10.0.0.2"), owner: a("c1", "eth0")},
	{ip: net.ParseIP("2001:db8::2"), owner: a("c1", "eth0")},
	{ip: net.ParseIP("10.0.0.3"), owner: a("legacy", "")},
	{ip: net.ParseIP("10.0.0.4"), owner: a("with space\tand \"quotes\"", "net 1")},
	{ip: net.ParseIP("10.0.0.5"), owner: a("line\nbreak", "\\")},
	{ip: net.ParseIP("10.0.0.6"), owner: a("ünïcode\x00", "eth0")},
}

func TestBucketRoundTrip(t *testing.T) {
	data := bucketContent(awkward)
	got := parseBucket(data)
	if fmt.Sprint(got) != fmt.Sprint(awkward) {
		t.Errorf("parseBucket(bucketContent(x)) = %v\nwant %v\n(content %q)", got, awkward, data)
	}
}

// TestBucketTornNeverMisreads cuts a bucket at every byte: what parses is
// always exactly the complete lines before the cut, never a shortened
// address or name.
func TestBucketTornNeverMisreads(t *testing.T) {
	data := bucketContent(awkward)
	for n := 0; n <= len(data); n++ {
		complete := strings.Count(string(data[:n]), "\n")
		got := parseBucket(data[:n])
		if fmt.Sprint(got) != fmt.Sprint(awkward[:complete]) {
			t.Errorf("parseBucket(first %d bytes) = %v, want %v", n, got, awkward[:complete])
		}
	}
}

func TestBucketSkipsGarbage(t *testing.T) {
	data := "not-an-ip \"x\" \"y\"\n10.0.0.2 \"c1\"\n10.0.0.3 \"c1\" \"eth0\" extra\n10.0.0.4 \"c1\" \"eth0\"\n"
	got := parseBucket([]byte(data))
	if len(got) != 1 || !got[0].ip.Equal(net.ParseIP("10.0.0.4")) || got[0].owner != a("c1", "eth0") {
		t.Errorf("parseBucket(%q) = %v, want only 10.0.0.4 of c1/eth0", data, got)
	}
}

func TestBucketOf(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 5000; i++ {
		b := bucketOf(a(fmt.Sprintf("c%d", i), "eth0"))
		if len(b) != 2 || strings.Trim(b, "0123456789abcdef") != "" {
			t.Fatalf("bucketOf() = %q, want two hex digits", b)
		}
		seen[b] = true
	}
	if len(seen) != 1<<bucketBits {
		t.Errorf("5000 attachments fell into %d buckets, want all %d", len(seen), 1<<bucketBits)
	}
}

// Matching lines as text finds what decoding them finds, for every owner.
func TestBucketAddressesMatchesParse(t *testing.T) {
	text := string(bucketContent(awkward))
	for _, l := range awkward {
		var want []net.IP
		for _, e := range parseBucket([]byte(text)) {
			if e.owner == l.owner {
				want = append(want, e.ip)
			}
		}
		if got := bucketAddresses(text, l.owner); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("bucketAddresses(%q) = %v, want %v", l.owner, got, want)
		}
	}
	if got := bucketAddresses(text+`10.0.0.7 "c1" "eth`, a("c1", "eth0")); len(got) != 2 {
		t.Errorf("bucketAddresses() with a torn last line = %v, want the two complete ones", got)
	}
}

func TestBucketWithout(t *testing.T) {
	text := string(bucketContent(awkward))
	for i, l := range awkward {
		got, found := bucketWithout(text, bucketLine(l))
		want := append(append([]leaseEntry{}, awkward[:i]...), awkward[i+1:]...)
		if !found || got != string(bucketContent(want)) {
			t.Errorf("bucketWithout(%v) = %q, %v; want %q", l, got, found, bucketContent(want))
		}
	}
	absent := bucketLine(leaseEntry{ip: net.ParseIP("10.0.0.2"), owner: a("c1", "eth1")})
	if got, found := bucketWithout(text, absent); found || got != text {
		t.Errorf("bucketWithout(absent) = %q, %v; want the text unchanged", got, found)
	}
}
