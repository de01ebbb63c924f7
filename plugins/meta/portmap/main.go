// Command portmap is a chained CNI plugin that forwards host ports to the
// container: DNAT of traffic addressed to the node, hairpin and localhost
// masquerade, on nftables or iptables (see README.md).
package main

import (
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/helper"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/skel"
)

func main() {
	// A helper request runs and exits here: the netfilter socket of a DEL
	// that removed rules lingers in a helper (see pkg/netfilter).
	helper.Dispatch(helper.Set{netfilter.LingerHelper: netfilter.Linger})
	p := &plugin{newBackend: firewall.New, host: linuxHost{}}
	skel.Main(&skel.Plugin{
		Name:   "portmap",
		Add:    p.Add,
		Check:  p.Check,
		Del:    p.Del,
		GC:     p.GC,
		Status: p.Status,
	})
}
