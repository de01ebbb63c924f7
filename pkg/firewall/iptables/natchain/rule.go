package natchain

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"

	"cnisuite/pkg/firewall/fwapi"
)

// Rule is an iptables rule as its arguments after "-A <chain>".
type Rule []string

// String returns the rule as iptables-restore reads it: each token as it
// is, or quoted when it holds a blank, a quote or a backslash.
func (r Rule) String() string {
	words := make([]string, len(r))
	for i, tok := range r {
		words[i] = word(tok)
	}
	return strings.Join(words, " ")
}

func word(tok string) string {
	if tok == "" || strings.ContainsAny(tok, " \t\n\"\\") {
		return Quote(tok)
	}
	return tok
}

// Quote quotes s as iptables-restore reads a quoted word: a backslash
// takes the next byte as it is, every other byte stands for itself. (Go's
// %q would write a non-printable rune of an interface name as \uXXXX,
// which iptables-restore reads as "uXXXX", while the netlink writer stores
// the bytes: the two would disagree on the owner's tag.)
func Quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Comment returns the text of the rule's "-m comment --comment", or "".
func (r Rule) Comment() string {
	for i := 0; i+3 < len(r); i++ {
		if r[i] == "-m" && r[i+1] == "comment" && r[i+2] == "--comment" {
			return r[i+3]
		}
	}
	return ""
}

// Target returns the rule's "-j" target (an owner chain for a jump).
func (r Rule) Target() string {
	if i := slices.Index(r, "-j"); i >= 0 && i+1 < len(r) {
		return r[i+1]
	}
	return ""
}

// digested returns matches, a comment holding a digest of the rule's text
// and the target: the digest tells Check and an ADD over existing chains
// whether a rule read back is the one wanted.
func digested(matches Rule, target ...string) Rule {
	text := append(slices.Clone(matches), target...).String()
	sum := sha256.Sum256([]byte(text))
	out := append(slices.Clone(matches), "-m", "comment", "--comment", "cnisuite "+hex.EncodeToString(sum[:4]))
	return append(out, target...)
}

// maxComment is the longest text an xt comment match holds (its 256
// bytes less the NUL); iptables cuts a longer --comment short silently.
const maxComment = 255

// EntryTag is the comment of an owner's jumps: "cnisuite " and the owner.
// When that does not fit in a comment (a long container ID or network
// name), it is "cnisuite ", 32 hex of the owner's digest, a space and as
// much of the owner as fits: unique, and the same from both writers.
// (iptables-restore also refuses any word over 1,023 bytes.)
func EntryTag(o fwapi.Owner) string {
	tag := "cnisuite " + o.String()
	if len(tag) <= maxComment {
		return tag
	}
	head := "cnisuite " + o.Hash()[:32] + " "
	s := o.String()
	n := maxComment - len(head)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return head + s[:n]
}
