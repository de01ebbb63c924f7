package k8s

import (
	"regexp"
	"strings"
)

// baseJump is a rule of iptables-save in a built-in chain of table nat.
var baseJump = regexp.MustCompile(`^-A (PREROUTING|OUTPUT|POSTROUTING) `)

// logFirewall logs how our rules and kube-proxy's sit side by side: every
// nftables chain with its hook and priority (iptables-nft's tables
// included), and the rules of iptables' built-in nat chains in the order
// a packet meets them.
func (c *cluster) logFirewall() {
	c.T.Helper()
	var jumps []string
	for _, line := range strings.Split(c.Must("iptables-save", "-t", "nat"), "\n") {
		if baseJump.MatchString(line) {
			jumps = append(jumps, line)
		}
	}
	c.T.Logf("kube-proxy in %s mode, the node's nftables chains:\n%s\niptables' nat base chains:\n%s",
		c.mode, c.Must("nft", "list", "chains"), strings.Join(jumps, "\n"))
}
