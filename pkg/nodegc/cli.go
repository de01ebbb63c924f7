package nodegc

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"cnisuite/pkg/skel"
)

// Command runs the gc command line (args after the program or subcommand
// name) and returns its exit status: 0, 1 when GC failed, 2 for a usage
// error. prog names the command in messages ("cnisuite gc", "cnisuite-gc").
//
//	-bindir /opt/cnisuite/bin [-confdir /etc/cni/net.d] [-cachedir /var/lib/cni] [-n]
//	-version
func Command(prog string, args []string, stdout, stderr io.Writer) int {
	var o Options
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.BinDir, "bindir", "", "directory holding cnisuite's plugins (required: after a rollback, not the runtime's plugin directory)")
	fs.StringVar(&o.ConfDir, "confdir", "/etc/cni/net.d", "the runtime's network configuration directory")
	fs.StringVar(&o.CacheDir, "cachedir", "/var/lib/cni", "libcni's cache directory, holding results/")
	fs.BoolVar(&o.DryRun, "n", false, "print what would be run, run nothing")
	showVersion := fs.Bool("version", false, "print the suite version this tool was built with, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		// The plugins it drives should be of the same version: compare with
		// what they print for an empty CNI_COMMAND.
		fmt.Fprintf(stdout, "%s (cnisuite %s)\n", prog, skel.Suite)
		return 0
	}
	if o.BinDir == "" {
		fmt.Fprintf(stderr, "%s: -bindir is required\n", prog)
		return 2
	}
	if err := Run(o, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	return 0
}
