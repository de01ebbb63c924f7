// Command bridge is the CNI bridge plugin: it attaches containers to a Linux
// bridge through veth pairs, with optional gateway, masquerade, VLANs, port
// flags and MAC spoof checking. See README.md for every configuration key.
package main

import (
	"context"
	"io"
	"os"
	"time"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/helper"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
	"cnisuite/plugins/ipam/host-local/hostlocal"
)

// hostLocalBuildID is the Go build ID of the host-local binary built with
// this bridge (-ldflags -X main.hostLocalBuildID=..., set by make build and
// scripts/release.sh); empty in a plain go build.
var hostLocalBuildID string

// portTimeout bounds the wait for a new bridge port to forward.
const portTimeout = 5 * time.Second

func main() {
	p := &plugin{newRules: firewall.New, portTimeout: portTimeout}
	helper.Dispatch(helper.Set{ // a helper request runs and exits here
		resync.HelperName: func(args []string, _ io.Reader) error {
			return resync.Serve(context.Background(), firewall.PluginBridge, args, os.Stdout, p.repair)
		},
	})
	// The host-local built with bridge runs in bridge's process (pkg/invoke).
	invoke.InProcess("host-local", hostLocalBuildID, hostlocal.Plugin())
	skel.Main(&skel.Plugin{
		Name: "bridge", Add: p.cmdAdd, Check: p.cmdCheck, Del: p.cmdDel, GC: p.cmdGC, Status: p.cmdStatus,
	})
}
