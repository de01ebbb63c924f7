package mutate

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	"cnisuite/test/fuzz/jsontree"
)

// oddNumbers are the numbers decoders and range checks get wrong: zero,
// negatives, the edges of every integer width, overflow, fractions and
// exponents.
var oddNumbers = []string{
	"0", "-0", "1", "-1", "2", "3", "13", "31", "32", "67", "68", "4094", "4095", "4096",
	"65535", "65536", "-65536", "2147483647", "2147483648", "-2147483648", "-2147483649",
	"4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "-9223372036854775809", "18446744073709551616",
	"123456789012345678901234567890", "1.5", "-0.5", "0.0000001", "1e2", "1E308", "1e400",
	"-1e400", "1e-400",
}

// oddStrings are strings that names, addresses, MACs, versions and keys are
// rarely tested with. None is an absolute path or climbs two directories:
// see safe.go.
var oddStrings = []string{
	"", " ", "0", "-1", "1e400", "true", "null", "{}", "[]", "\x00", "a\x00b", "\n", "\t",
	"ü", "日本語", "\u202egnp.exe", "🙂🙂🙂", "\ufeff", "\ud7ff", "Ω≈ç√", "%s%n%x", "\\", "\"", "'",
	"$(id)", "`id`", "*", "?", ":", ";", "#", "IFNAME", "eth0", "lo", "eth0.100",
	"veth0", "cni0", "fzbr0", "a-very-long-interface-name", "..", ".", "./x", "x/y",
	"net", "net.", "net..ipv4", "net.ipv4.conf.all.forwarding", "net/ipv4/ip_forward",
	"kernel.hostname", "net.ipv4.conf.IFNAME.rp_filter", "0.0.0.0", "::", "255.255.255.255",
	"10.0.0.1", "10.0.0.0/8", "10.0.0.1/33", "300.1.1.1", "fe80::1%eth0", "::ffff:10.0.0.1",
	"fd00::/129", "0.0.0.0/0", "::/0", "224.0.0.1", "00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff",
	"01:00:5e:00:00:01", "0A:58:0A:16:00:09", "0a-58-0a-16-00-09", "0a:58:0a:16:00",
	"tcp", "UDP", "sctp", "icmp", "iptables", "nftables", "legacy", "host-local",
	"loopback", "tuning", "portmap", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0",
	"1.1.0", "1.2.0", "2.0.0", "-m", "!", "-j", "ACCEPT", "ip", "saddr", "counter",
	"drop", "1; flush ruleset", "a\nb", "#comment", "CNI-HOSTPORT-DNAT", "POSTROUTING",
	"cni.dev/valid-attachments",
}

// wrongVersions are cniVersion values a plugin must refuse, and every
// version it must accept (a valid but different one changes the result's
// shape).
var wrongVersions = []string{
	"", "0", "0.0.0", "0.0.1", "0.1", "0.3", "1.0", "1", "v1.0.0", "1.0.0-rc1", " 1.0.0",
	"1.0.0 ", "01.0.0", "1.0.00", "1.1.1", "1.2.0", "2.0.0", "999.999.999", "0.1.0", "0.2.0",
	"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
}

// oddString returns one of oddStrings, a very long string, or random
// unicode of random length.
func oddString(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		n := []int{15, 16, 64, 255, 256, 4096, 70000}[r.IntN(7)]
		return strings.Repeat(string(rune('a'+r.IntN(26))), n)
	case 1:
		return randomUnicode(r, 1+r.IntN(40))
	}
	return oddStrings[r.IntN(len(oddStrings))]
}

// randomUnicode mixes ASCII, Latin, CJK, emoji, controls and invalid
// surrogates (which encoding/json writes as U+FFFD).
func randomUnicode(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		switch r.IntN(6) {
		case 0:
			b.WriteRune(rune(0x20 + r.IntN(0x5f)))
		case 1:
			b.WriteRune(rune(0xa0 + r.IntN(0x100)))
		case 2:
			b.WriteRune(rune(0x4e00 + r.IntN(0x5000)))
		case 3:
			b.WriteRune(rune(0x1f300 + r.IntN(0x300)))
		case 4:
			b.WriteRune(rune(r.IntN(0x20)))
		default:
			b.WriteRune(rune(0xd800 + r.IntN(0x800)))
		}
	}
	return b.String()
}

// oddNumber returns one of oddNumbers.
func oddNumber(r *rand.Rand) json.Number {
	return json.Number(oddNumbers[r.IntN(len(oddNumbers))])
}

// otherType returns a value of a JSON type other than v's, built from v
// where it can be (the value wrapped in a list or an object).
func otherType(r *rand.Rand, v any) any {
	for {
		var c any
		switch r.IntN(7) {
		case 0:
			c = nil
		case 1:
			c = r.IntN(2) == 0
		case 2:
			c = oddNumber(r)
		case 3:
			c = oddString(r)
		case 4:
			c = jsontree.Arr(jsontree.Clone(v))
		case 5:
			c = &jsontree.Array{Items: []any{}}
		default:
			c = jsontree.Obj("x", jsontree.Clone(v))
		}
		if jsontree.TypeName(c) != jsontree.TypeName(v) {
			return c
		}
	}
}

// deep returns v nested depth times in arrays or objects.
func deep(r *rand.Rand, depth int) any {
	var v any = "bottom"
	obj := r.IntN(2) == 0
	for range depth {
		if obj {
			v = &jsontree.Object{Fields: []jsontree.Field{{Key: "a", Value: v}}}
		} else {
			v = &jsontree.Array{Items: []any{v}}
		}
	}
	return v
}
