package firewall

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"

	"cnisuite/pkg/types"
)

// Mapped returns the host ports of the owner's DNAT chains, read from the
// map elements their rules' comments name ("ports:udp . 53",
// "hostip_ports:192.0.2.1 . tcp . 80").
func (b *nftBackend) Mapped(_ context.Context, o Owner) ([]PortMapping, error) {
	conn, err := dialNL()
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "%w", err)
	}
	defer conn.close()
	chains := []nftChain{
		{table: nftPort4, name: nftChainName(nftPrefixDNAT, o)},
		{table: nftPort6, name: nftChainName(nftPrefixDNAT, o)},
	}
	existing, err := conn.readChains(chains)
	if err != nil {
		return nil, err
	}
	var out []PortMapping
	for _, e := range existing {
		for _, el := range e.elems() {
			if m, ok := mappingOfElem(el); ok {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func mappingOfElem(el nftElem) (PortMapping, bool) {
	parts := strings.Split(el.key, " . ")
	var host net.IP
	switch {
	case el.set == "ports" && len(parts) == 2:
	case el.set == "hostip_ports" && len(parts) == 3:
		host, parts = net.ParseIP(parts[0]), parts[1:]
	default:
		return PortMapping{}, false
	}
	port, err := strconv.Atoi(parts[1])
	if err != nil {
		return PortMapping{}, false
	}
	return PortMapping{HostPort: port, Protocol: parts[0], HostIP: host}, true
}

var (
	iptDNATRE = regexp.MustCompile(`(?:^| )-p (\w+) -m \w+ --dport (\d+) .*-j DNAT`)
	iptDestRE = regexp.MustCompile(`(?:^| )-d ([^ /]+)`)
)

// Mapped returns the host ports of the owner's DNAT chains, parsed from
// `iptables -t nat -S <chain>` of each family.
func (b *iptBackend) Mapped(ctx context.Context, o Owner) ([]PortMapping, error) {
	var out []PortMapping
	for _, v4 := range []bool{true, false} {
		rules, err := iptFor(v4).read(ctx, []string{iptChainName(iptPrefixDNAT, o)})
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
				out = append(out, PortMapping{HostPort: port, Protocol: m[1], HostIP: host})
			}
		}
	}
	return out, nil
}
