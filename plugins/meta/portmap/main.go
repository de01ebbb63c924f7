// Command portmap is a chained CNI plugin that forwards host ports to the
// container: DNAT of traffic addressed to the node, hairpin and localhost
// masquerade, on nftables or iptables (see README.md).
package main

import (
	"context"
	"io"
	"os"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/helper"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/sitter"
	"cnisuite/pkg/skel"
)

func main() {
	// A helper request runs and exits here: the netfilter socket of a DEL
	// that removed rules goes to the node's sitter (see pkg/netfilter),
	// which may be started from this binary.
	p := &plugin{newBackend: firewall.New, host: linuxHost{}}
	helper.Dispatch(helper.Set{
		sitter.HelperName: sitter.Serve,
		resync.HelperName: func(args []string, _ io.Reader) error {
			return resync.Serve(context.Background(), firewall.PluginPortmap, args, os.Stdout, p.repair)
		},
	})
	skel.Main(&skel.Plugin{
		Name:   "portmap",
		Add:    p.Add,
		Check:  p.Check,
		Del:    p.Del,
		GC:     p.GC,
		Status: p.Status,
	})
}
