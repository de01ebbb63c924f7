// Command host-local is the CNI IPAM plugin that leases addresses from
// local ranges, one file per lease under a data directory, in the on-disk
// format of the reference plugin.
package main

import (
	"cnisuite/pkg/helper"
	"cnisuite/pkg/skel"
)

func main() {
	helper.Dispatch(nil) // no helpers: a helper request is an error
	skel.Main(newPlugin())
}
