package store

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"cnisuite/pkg/types"
)

// The index is a fixed set of 64 bucket files. An attachment belongs to
// the bucket named by the first 6 bits of the SHA-256 of its names, as two
// hex digits ("00" … "3f"); a bucket lists the leases of its attachments,
// one line each:
//
//	<ip> "<containerID>" "<ifname>"\n
//
// the two names quoted as Go strings, so that no byte of them can end a
// field or a line early. A line that does not end in a closing quote and a
// newline is ignored: a torn line names nothing.
//
// Why 64: the rebuild after an upgrade or a foreign change creates every
// bucket in use, and creating a file costs far more than reading one
// (0.05 to 1.5 ms on ext4 against 10 µs), so there must be few; a lookup
// reads one bucket and a change rewrites one, so a bucket must stay small.
// With 10,000 leases the rebuild creates 64 files next to the 10,000 it
// reads, and a bucket holds about 160 lines (5 to 14 KiB, with 64-digit
// container IDs); at 65,536 leases (a full /16), about 90 KiB. ADD and DEL
// match lines as text and never decode a bucket (bucketAddresses,
// bucketWithout), so a bucket of that size costs them microseconds.
const bucketBits = 6

func attachmentHash(a types.Attachment) [sha256.Size]byte {
	return sha256.Sum256([]byte(a.ContainerID + "\x00" + a.IfName))
}

// bucketOf names the bucket file of a: the first bucketBits bits of its
// hash, as two hex digits.
func bucketOf(a types.Attachment) string {
	sum := attachmentHash(a)
	return hex.EncodeToString([]byte{sum[0] >> (8 - bucketBits)})
}

// bucketLine renders one lease of a bucket.
func bucketLine(l leaseEntry) string { return l.ip.String() + lineOwner(l.owner) }

// lineOwner is how a line of a bucket ends when it lists a lease of a.
func lineOwner(a types.Attachment) string {
	return " " + strconv.Quote(a.ContainerID) + " " + strconv.Quote(a.IfName) + "\n"
}

func bucketContent(entries []leaseEntry) []byte {
	var b strings.Builder
	for _, l := range entries {
		b.WriteString(bucketLine(l))
	}
	return []byte(b.String())
}

// parseBucket reads a bucket (the inverse of bucketContent), skipping every
// line that is not complete.
func parseBucket(data []byte) []leaseEntry {
	var out []leaseEntry
	text := string(data)
	for {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			return out // no newline: the end of the file, or a torn line
		}
		text = rest
		if l, ok := parseBucketLine(line); ok {
			out = append(out, l)
		}
	}
}

// bucketAddresses returns the addresses the complete lines of a bucket list
// for a. Lines are matched as text, without decoding the names: a line is
// a's when it is an address followed by a's quoted names. No other
// attachment's line can end that way, since an address holds neither space
// nor quote.
func bucketAddresses(text string, a types.Attachment) []net.IP {
	owner := lineOwner(a)
	var ips []net.IP
	for {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			return ips
		}
		text = rest
		if addr, ok := strings.CutSuffix(line+"\n", owner); ok {
			if ip := net.ParseIP(addr); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
}

// bucketWithout returns the bucket text without its line equal to line.
func bucketWithout(text, line string) (kept string, found bool) {
	i := 0
	for i < len(text) && !strings.HasPrefix(text[i:], line) {
		next := strings.IndexByte(text[i:], '\n')
		if next < 0 {
			return text, false
		}
		i += next + 1
	}
	if i >= len(text) {
		return text, false
	}
	return text[:i] + text[i+len(line):], true
}

func parseBucketLine(line string) (leaseEntry, bool) {
	addr, rest, _ := strings.Cut(line, " ")
	ip := net.ParseIP(addr)
	id, rest, ok1 := unquoteField(rest)
	rest, ok2 := strings.CutPrefix(rest, " ")
	ifname, rest, ok3 := unquoteField(rest)
	if ip == nil || !ok1 || !ok2 || !ok3 || rest != "" {
		return leaseEntry{}, false
	}
	return leaseEntry{ip: ip, owner: types.Attachment{ContainerID: id, IfName: ifname}}, true
}

// unquoteField reads the quoted string s starts with and returns what
// follows it.
func unquoteField(s string) (value, rest string, ok bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", false
	}
	value, err = strconv.Unquote(q)
	return value, s[len(q):], err == nil
}
