// Command cnisuite is the node administrator's tool for cnisuite's plugins:
//
//	cnisuite gc -bindir DIR [-confdir DIR] [-cachedir DIR] [-n]
//	    remove what the plugins left for attachments the runtime no
//	    longer knows (pkg/nodegc; also installed as cnisuite-gc)
//	cnisuite resync [-n] [-bindir DIR] [-records DIR]
//	    put back the firewall rules and sysctls of every attachment on
//	    the node that other software removed (pkg/resync)
//	cnisuite version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"cnisuite/pkg/nodegc"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
)

const usage = `usage: cnisuite gc -bindir DIR [-confdir DIR] [-cachedir DIR] [-n]
       cnisuite resync [-n] [-bindir DIR] [-records DIR]
       cnisuite version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "gc":
		return nodegc.Command("cnisuite gc", args[1:], stdout, stderr)
	case "resync":
		return resyncCommand(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "cnisuite (cnisuite %s)\n", skel.Suite)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, "Usage of cnisuite:\n"+usage)
		return 0
	}
	fmt.Fprintf(stderr, "cnisuite: unknown command %q\n%s", args[0], usage)
	return 2
}

// resyncCommand runs `cnisuite resync`: exit status 0 when every
// attachment is intact or repaired, 1 when one could not be, 2 for a usage
// error.
func resyncCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o resync.Options
	fs := flag.NewFlagSet("cnisuite resync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.DryRun, "n", false, "print what is missing, change nothing")
	fs.StringVar(&o.BinDir, "bindir", "", "directory of the plugins to repair with (default: each attachment's own plugin binary)")
	fs.StringVar(&o.Root, "records", "", "the attachments' records (default /run/cnisuite/records)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cnisuite resync: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	outs, err := resync.Run(ctx, o, stdout)
	if len(outs) == 0 && err == nil {
		fmt.Fprintln(stdout, "no attachments recorded")
	}
	if err != nil {
		fmt.Fprintf(stderr, "cnisuite resync: %v\n", err)
		return 1
	}
	return 0
}
