// Command cnisuite-gc removes what cnisuite's plugins left on a node for
// attachments the container runtime no longer knows: the cleanup after
// switching a node back to the reference plugins, whose DEL does not know
// our rules, leases index or tuning state. It never touches an attachment
// the runtime knows.
//
// The runtime's knowledge is libcni's result cache (<cachedir>/results,
// /var/lib/cni/results for containerd, CRI-O and podman's CNI backend): an
// attachment is live while its cache entry exists, and libcni removes the
// entry only after a successful DEL. For every network of confdir, every
// plugin of ours in it (bridge, which passes GC on to host-local, portmap,
// tuning) is run from bindir with CNI_COMMAND=GC and the live attachments
// of that network as cni.dev/valid-attachments.
//
//	cnisuite-gc -bindir /opt/cnisuite/bin [-confdir /etc/cni/net.d] [-cachedir /var/lib/cni] [-n]
//	cnisuite-gc -version
package main

import (
	"flag"
	"fmt"
	"os"

	"cnisuite/pkg/skel"
)

func main() {
	var o options
	flag.StringVar(&o.binDir, "bindir", "", "directory holding cnisuite's plugins (required: after a rollback, not the runtime's plugin directory)")
	flag.StringVar(&o.confDir, "confdir", "/etc/cni/net.d", "the runtime's network configuration directory")
	flag.StringVar(&o.cacheDir, "cachedir", "/var/lib/cni", "libcni's cache directory, holding results/")
	flag.BoolVar(&o.dryRun, "n", false, "print what would be run, run nothing")
	showVersion := flag.Bool("version", false, "print the suite version this tool was built with, and exit")
	flag.Parse()
	if *showVersion {
		// The plugins it drives should be of the same version: compare with
		// what they print for an empty CNI_COMMAND.
		fmt.Printf("cnisuite-gc (cnisuite %s)\n", skel.Suite)
		return
	}
	if o.binDir == "" {
		fmt.Fprintln(os.Stderr, "cnisuite-gc: -bindir is required")
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cnisuite-gc:", err)
		os.Exit(1)
	}
}
