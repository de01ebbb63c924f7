// Command loopback is the CNI plugin that brings up the loopback interface
// of a container's network namespace.
package main

import (
	"cnisuite/pkg/helper"
	"cnisuite/pkg/skel"
)

func main() {
	helper.Dispatch(nil) // no helpers: a helper request is an error
	skel.Main(&skel.Plugin{
		Name:   "loopback",
		Add:    cmdAdd,
		Check:  cmdCheck,
		Del:    cmdDel,
		GC:     cmdGC,
		Status: cmdStatus,
	})
}
