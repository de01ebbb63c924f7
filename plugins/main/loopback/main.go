// Command loopback is the CNI plugin that brings up the loopback interface
// of a container's network namespace.
package main

import "cnisuite/pkg/skel"

func main() {
	skel.Main(&skel.Plugin{
		Name:   "loopback",
		Add:    cmdAdd,
		Check:  cmdCheck,
		Del:    cmdDel,
		GC:     cmdGC,
		Status: cmdStatus,
	})
}
