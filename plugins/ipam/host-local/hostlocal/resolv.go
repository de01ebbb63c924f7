package hostlocal

import (
	"bufio"
	"bytes"
	"os"
	"strings"

	"cnisuite/pkg/types"
)

// loadDNS reads a resolv.conf into the DNS of the result: nameserver lines
// append, domain sets the domain, search and options append all their
// words. Comments (# or ;), short lines and other keywords are skipped. No
// path means no DNS.
func loadDNS(path string) (types.DNS, error) {
	var dns types.DNS
	if path == "" {
		return dns, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return dns, types.Errorf(types.ErrInvalidConfig, "ipam.resolvConf %q: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			dns.Nameservers = append(dns.Nameservers, fields[1])
		case "domain":
			dns.Domain = fields[1]
		case "search":
			dns.Search = append(dns.Search, fields[1:]...)
		case "options":
			dns.Options = append(dns.Options, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return dns, types.Errorf(types.ErrInvalidConfig, "ipam.resolvConf %q: %w", path, err)
	}
	return dns, nil
}
