package natchain

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cnisuite/pkg/firewall/fwapi"
)

// Stale returns, sorted and once each, the chains of names that start
// with one of prefixes and that kept lacks: what GC deletes.
func Stale(names, prefixes []string, kept map[string]bool) []string {
	var out []string
	for _, name := range names {
		if kept[name] || slices.Contains(out, name) {
			continue
		}
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// The expressions are compiled on first use: a plugin call that reads no
// rule back pays nothing for them.
var (
	dnatRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )-p (\w+) (?:.* )?--dport (\d+)(?::(\d+))? .*-j DNAT`)
	})
	destRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )(?:-d |-m iprange --dst-range )([^ /-]+)`)
	})
)

// ParseDNAT reads the host port (and range), protocol and host address a DNAT rule of
// an owner chain forwards, as `iptables -t nat -S <chain>` prints it;
// false for any other rule.
func ParseDNAT(rule string) (fwapi.PortMapping, bool) {
	m := dnatRE().FindStringSubmatch(rule)
	if m == nil {
		return fwapi.PortMapping{}, false
	}
	port, _ := strconv.Atoi(m[2])
	pm := fwapi.PortMapping{HostPort: port, Protocol: m[1], HostIP: mappedHost(rule)}
	if last, _ := strconv.Atoi(m[3]); last > port {
		pm.Range = last - port + 1
	}
	return pm, true
}

// mappedHost returns the host address a DNAT rule matches (-d, or an
// iprange match when the user's conditions hold a -d of their own), nil
// when it matches any; a negated match (a user's condition) is not one.
func mappedHost(rule string) net.IP {
	for _, m := range destRE().FindAllStringSubmatchIndex(rule, -1) {
		if !strings.HasSuffix(rule[:m[0]], "!") {
			return net.ParseIP(rule[m[2]:m[3]])
		}
	}
	return nil
}
