// Command tuning is a chained CNI plugin: it writes sysctls and sets link
// attributes (MAC, MTU, promisc, allmulti, txqueuelen), features (offloads)
// and channel counts on the container interface, and puts everything back
// on DEL.
package main

import (
	"cnisuite/pkg/helper"
	"cnisuite/pkg/skel"
)

func main() {
	helper.Dispatch(nil) // no helpers: a helper request is an error
	t := &tuner{allowList: DefaultAllowListPath, sysRoot: "/proc/sys"}
	skel.Main(&skel.Plugin{
		Name:   "tuning",
		Add:    t.Add,
		Check:  t.Check,
		Del:    t.Del,
		GC:     t.GC,
		Status: t.Status,
	})
}
