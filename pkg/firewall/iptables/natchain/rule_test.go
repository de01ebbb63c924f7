package natchain

import (
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
)

func TestRuleString(t *testing.T) {
	tests := []struct {
		rule Rule
		want string
	}{
		{Rule{"-s", "10.88.0.2/32", "-j", "RETURN"}, `-s 10.88.0.2/32 -j RETURN`},
		{Rule{"-m", "comment", "--comment", "cnisuite a/b", "-j", "X"}, `-m comment --comment "cnisuite a/b" -j X`},
		{Rule{"--comment", `e"x`}, `--comment "e\"x"`},
		{Rule{"--comment", `a\b`}, `--comment "a\\b"`},
		{Rule{"--comment", "\ufeffbr"}, "--comment \ufeffbr"},
		{Rule{"--comment", ""}, `--comment ""`},
		{Rule{"!", "-i", "cni0"}, `! -i cni0`},
	}
	for _, tc := range tests {
		if got := tc.rule.String(); got != tc.want {
			t.Errorf("Rule%q.String() = %s, want %s", []string(tc.rule), got, tc.want)
		}
	}
}

func TestRuleParts(t *testing.T) {
	r := digested(Rule{"-s", "10.88.0.2/32"}, "-j", "MASQUERADE")
	if c := r.Comment(); !strings.HasPrefix(c, "cnisuite ") || len(c) != len("cnisuite ")+8 {
		t.Errorf("Comment() = %q, want cnisuite and 8 hex", c)
	}
	if got := r.Target(); got != "MASQUERADE" {
		t.Errorf("Target() = %q, want MASQUERADE", got)
	}
}

func TestEntryTag(t *testing.T) {
	short := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	if got := EntryTag(short); got != "cnisuite portmap/net1/ctr1/eth0" {
		t.Errorf("EntryTag(short owner) = %q, want the owner as it is", got)
	}
	long, twin := short, short
	long.ContainerID = strings.Repeat("é", 500) + "1"
	twin.ContainerID = strings.Repeat("é", 500) + "2"
	tag := EntryTag(long)
	if len(tag) > 255 || !strings.HasPrefix(tag, "cnisuite "+long.Hash()[:32]+" portmap/net1/") || !utf8Valid(tag) {
		t.Errorf("EntryTag(1,000-byte ID) = %q (%d bytes): want ≤ 255 bytes, the digest, whole runes", tag, len(tag))
	}
	if EntryTag(twin) == tag {
		t.Error("two owners whose IDs differ after 255 bytes share a tag")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func TestChainNames(t *testing.T) {
	o := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	for _, p := range []string{PrefixMasq, PrefixDNAT, PrefixHairpin} {
		if n := ChainName(p, o); len(n) != 28 {
			t.Errorf("ChainName(%q) = %q: %d characters, want 28", p, n, len(n))
		}
	}
}
