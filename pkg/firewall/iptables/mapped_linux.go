package iptables

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"

	"cnisuite/pkg/firewall/fwtypes"
)

var (
	iptDNATRE = regexp.MustCompile(`(?:^| )-p (\w+) -m \w+ --dport (\d+) .*-j DNAT`)
	iptDestRE = regexp.MustCompile(`(?:^| )-d ([^ /]+)`)
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
				m := iptDNATRE.FindStringSubmatch(r)
				if m == nil {
					continue
				}
				port, _ := strconv.Atoi(m[2])
				var host net.IP
				if d := iptDestRE.FindStringSubmatch(r); d != nil && !strings.Contains(r, "! -d "+d[1]) {
					host = net.ParseIP(d[1])
				}
				out = append(out, fwtypes.PortMapping{HostPort: port, Protocol: m[1], HostIP: host})
			}
		}
	}
	return out, nil
}
