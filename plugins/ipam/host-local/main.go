// Command host-local is the CNI IPAM plugin that leases addresses from
// local ranges, one file per lease under a data directory, in the on-disk
// format of the reference plugin.
package main

import "cnisuite/pkg/skel"

func main() { skel.Main(newPlugin()) }
