// Command bridge is the CNI bridge plugin: it attaches containers to a Linux
// bridge through veth pairs, with optional gateway, masquerade, VLANs, port
// flags and MAC spoof checking. See README.md for every configuration key.
package main

import (
	"time"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/helper"
	"cnisuite/pkg/skel"
)

// portTimeout bounds the wait for a new bridge port to forward.
const portTimeout = 5 * time.Second

func main() {
	helper.Dispatch(helpers()) // a helper request runs and exits here
	p := &plugin{newRules: firewall.New, portTimeout: portTimeout}
	skel.Main(&skel.Plugin{
		Name: "bridge", Add: p.cmdAdd, Check: p.cmdCheck, Del: p.cmdDel, GC: p.cmdGC, Status: p.cmdStatus,
	})
}
