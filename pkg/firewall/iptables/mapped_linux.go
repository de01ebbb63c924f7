package iptables

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"cnisuite/pkg/firewall/fwtypes"
)

// The expressions are compiled on first use (see iptCommentRE).
var (
	iptDNATRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )-p (\w+) (?:.* )?--dport (\d+) .*-j DNAT`)
	})
	iptDestRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^| )(?:-d |-m iprange --dst-range )([^ /-]+)`)
	})
)

// Mapped returns the host ports of the owner's DNAT chains, parsed from
// `iptables -t nat -S <chain>` of each family.
func (b *Backend) Mapped(ctx context.Context, o fwtypes.Owner) ([]fwtypes.PortMapping, error) {
	var out []fwtypes.PortMapping
	for _, v4 := range []bool{true, false} {
		rules, err := iptFor(v4).read(ctx, []string{ChainName(PrefixDNAT, o)})
		if err != nil {
			return nil, err
		}
		for _, rs := range rules {
			for _, r := range rs {
				m := iptDNATRE().FindStringSubmatch(r)
				if m == nil {
					continue
				}
				port, _ := strconv.Atoi(m[2])
				out = append(out, fwtypes.PortMapping{HostPort: port, Protocol: m[1], HostIP: mappedHost(r)})
			}
		}
	}
	return out, nil
}

// mappedHost returns the host address a DNAT rule matches (-d, or an
// iprange match when the user's conditions hold a -d of their own), nil
// when it matches any; a negated match (a user's condition) is not one.
func mappedHost(rule string) net.IP {
	for _, m := range iptDestRE().FindAllStringSubmatchIndex(rule, -1) {
		if !strings.HasSuffix(rule[:m[0]], "!") {
			return net.ParseIP(rule[m[2]:m[3]])
		}
	}
	return nil
}
