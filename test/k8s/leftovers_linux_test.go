package k8s

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"cnisuite/test/nodens"
)

// stateDirs are where our plugins (and the runtime's libcni result cache)
// keep state per attachment: leases, records, holds, cached results.
var stateDirs = []string{"/var/lib/cni", "/run/cni", "/run/cnisuite"}

// kept reports whether a state file (its path on the node) is one a
// network keeps with no pod attached: locks, host-local's last address
// handed out (and its spare for the exchange), its boot ID, its index's
// stamp. Leases, records, holds and cached results must all go.
func kept(path string) bool {
	base := filepath.Base(path)
	switch {
	case base == "lock", base == ".lock", strings.HasPrefix(base, "last_reserved_ip."):
		return true
	case strings.Contains(path, "/.host-local-boot/"):
		return true
	case strings.Contains(path, "/.host-local-index"):
		return strings.HasPrefix(base, ".")
	}
	return false
}

// leftovers lists what the pods with the given addresses left on the node:
// veth links, state files but those kept, and firewall rules (nft,
// which shows iptables-nft's too, and iptables-legacy) naming an address.
func (c *cluster) leftovers(ips []string) []string {
	var found []string
	for _, veth := range c.podVeths() {
		found = append(found, "veth: "+veth)
	}
	for _, dir := range stateDirs {
		_ = filepath.WalkDir(c.Path(dir), func(p string, d fs.DirEntry, err error) error {
			if rel := strings.TrimPrefix(p, c.Path("")); err == nil && !d.IsDir() && !kept(rel) {
				found = append(found, "state file: "+rel)
			}
			return nil // a directory that vanished mid-walk holds nothing
		})
	}
	var alts []string
	for _, ip := range ips {
		alts = append(alts, regexp.QuoteMeta(ip))
	}
	addr := regexp.MustCompile(`(^|[^0-9.])(` + strings.Join(alts, "|") + `)([^0-9]|$)`)
	for _, dump := range []string{"nft list ruleset", "if command -v iptables-legacy-save >/dev/null; then iptables-legacy-save; fi"} {
		out, err := c.Run(30*time.Second, "sh", "-c", dump)
		if err != nil {
			found = append(found, err.Error())
		}
		for _, line := range strings.Split(out, "\n") {
			// kube-proxy's nftables mode names its endpoint chains after
			// the address, and deletes them some time after it emptied
			// them (measured: not within a minute); an empty chain
			// carries no rule.
			if addr.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "chain ") {
				found = append(found, "rule: "+strings.TrimSpace(line))
			}
		}
	}
	return found
}

// podVeths lists the node's veth links but the one to the outside
// (outsideLink), one line each.
func (c *cluster) podVeths() []string {
	c.T.Helper()
	var veths []string
	for _, line := range strings.Split(strings.TrimSpace(c.Must("ip", "-o", "link", "show", "type", "veth")), "\n") {
		if line != "" && !strings.Contains(line, " "+outsideLink+"@") {
			veths = append(veths, line)
		}
	}
	return veths
}

// requireFootprint fails the test unless, with the pods running, the
// leftovers check finds their veths, leases and rules: proof that it looks
// where they are.
func (c *cluster) requireFootprint(ips []string) {
	c.T.Helper()
	found := c.leftovers(ips)
	for _, kind := range []string{"veth: ", "state file: ", "rule: "} {
		if !slices.ContainsFunc(found, func(f string) bool { return strings.HasPrefix(f, kind) }) {
			c.T.Errorf("with pods %v running, the leftovers check finds no %q among:\n  %s", ips, kind, strings.Join(found, "\n  "))
		}
	}
}

// requireClean fails the test unless, within a minute of the pods'
// deletion, nothing of theirs is left.
func (c *cluster) requireClean(ips []string) {
	c.T.Helper()
	var found []string
	if !nodens.WaitFor(time.Minute, func() bool { found = c.leftovers(ips); return len(found) == 0 }) {
		c.T.Errorf("after every pod was deleted, the node still holds:\n  %s", strings.Join(found, "\n  "))
	}
}
