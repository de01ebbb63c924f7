// Command host-local is the CNI IPAM plugin that leases addresses from
// local ranges, one file per lease under a data directory, in the on-disk
// format of the reference plugin. The plugin itself is package hostlocal.
package main

import (
	"cnisuite/pkg/helper"
	"cnisuite/pkg/skel"
	"cnisuite/plugins/ipam/host-local/hostlocal"
)

func main() {
	helper.Dispatch(nil) // no helpers: a helper request is an error
	skel.Main(hostlocal.Plugin())
}
