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
	"cnisuite/pkg/skel"
)

func main() {
	// A helper request (a repair that cnisuite resync runs) runs and exits
	// here.
	p := &plugin{newBackend: firewall.New, host: linuxHost{}}
	helper.Dispatch(helper.Set{
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
