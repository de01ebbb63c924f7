// Command cnisuite-gc is the older name of `cnisuite gc` (pkg/nodegc),
// kept for the scripts and packages that call it.
//
//	cnisuite-gc -bindir /opt/cnisuite/bin [-confdir /etc/cni/net.d] [-cachedir /var/lib/cni] [-n]
//	cnisuite-gc -version
package main

import (
	"os"

	"cnisuite/pkg/nodegc"
)

func main() {
	os.Exit(nodegc.Command("cnisuite-gc", os.Args[1:], os.Stdout, os.Stderr))
}
