// Command cnisuite is the node administrator's tool for cnisuite's plugins:
//
//	cnisuite gc -bindir DIR [-confdir DIR] [-cachedir DIR] [-n]
//	    remove what the plugins left for attachments the runtime no
//	    longer knows (pkg/nodegc; also installed as cnisuite-gc)
//	cnisuite resync [-n] [-bindir DIR[:DIR...]] [-records DIR]
//	    put back the firewall rules and sysctls of every attachment on
//	    the node that other software removed (pkg/resync)
//	cnisuite watch [-bindir DIR[:DIR...]] [-records DIR]
//	    the same repair, run by itself on nftables and forwarding changes
//	    and firewalld reloads (pkg/watch)
//	cnisuite version
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cnisuite/pkg/nodegc"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/watch"
)

const usage = `usage: cnisuite gc -bindir DIR [-confdir DIR] [-cachedir DIR] [-n]
       cnisuite resync [-n] [-bindir DIR[:DIR...]] [-records DIR]
       cnisuite watch [-bindir DIR[:DIR...]] [-records DIR]
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
	case "watch":
		return watchCommand(ctx, args[1:], stdout, stderr)
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

// resyncFlags declares the flags resync and watch share.
func resyncFlags(name string, o *resync.Options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("bindir", "directories of the plugins to repair with, searched in order, separated by ':' as in CNI_PATH "+
		"(default: cnisuite's own directory, "+resync.PackageBinDir+", /opt/cni/bin)", func(v string) error {
		for _, d := range filepath.SplitList(v) {
			if !filepath.IsAbs(d) {
				return fmt.Errorf("%q: not an absolute directory", d)
			}
			o.BinDirs = append(o.BinDirs, d)
		}
		return nil
	})
	fs.StringVar(&o.Root, "records", "", "the attachments' records (default /run/cnisuite/records)")
	return fs
}

// parse parses args; code is -1 to go on, else the exit status.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2
	}
	return -1
}

// watchCommand runs `cnisuite watch` until SIGINT or SIGTERM: one line per
// repair that found something missing or failed.
func watchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o resync.Options
	if code := parse(resyncFlags("cnisuite watch", &o, stderr), args, stderr); code >= 0 {
		return code
	}
	repair := func(ctx context.Context, reason string) {
		var out bytes.Buffer
		outs, err := resync.Run(ctx, o, &out)
		if err == nil && !changed(outs) {
			return
		}
		fmt.Fprintf(stdout, "%s %s:\n%s", time.Now().UTC().Format(time.RFC3339Nano), reason, out.String())
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "cnisuite watch: %v\n", err)
		}
	}
	ready := func(sources []string) {
		fmt.Fprintf(stdout, "cnisuite watch: watching %s\n", strings.Join(sources, ", "))
	}
	safety, err := safetyInterval()
	if err != nil {
		fmt.Fprintf(stderr, "cnisuite watch: %v\n", err)
		return 2
	}
	if err := watch.Run(ctx, watch.Options{Repair: repair, Log: stderr, Ready: ready, SafetyInterval: safety}); err != nil {
		fmt.Fprintf(stderr, "cnisuite watch: %v\n", err)
		return 1
	}
	return 0
}

// safetyEnv shortens the watcher's safety net for tests: an iptables-legacy
// node's reset sends no event, and a test cannot wait a minute. Nodes keep
// the minute (docs/operations.md).
const safetyEnv = "CNISUITE_WATCH_SAFETY_INTERVAL"

// safetyInterval is safetyEnv's duration, 0 (the default) when unset.
func safetyInterval() (time.Duration, error) {
	v := os.Getenv(safetyEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 2s", safetyEnv, v)
	}
	return d, nil
}

// changed reports whether a repair found anything missing.
func changed(outs []resync.Outcome) bool {
	for _, oc := range outs {
		if len(oc.Missing) > 0 || oc.Error != "" {
			return true
		}
	}
	return false
}

// resyncCommand runs `cnisuite resync`: exit status 0 when every
// attachment is intact or repaired, 1 when one could not be, 2 for a usage
// error.
func resyncCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o resync.Options
	fs := resyncFlags("cnisuite resync", &o, stderr)
	fs.BoolVar(&o.DryRun, "n", false, "print what is missing, change nothing")
	if code := parse(fs, args, stderr); code >= 0 {
		return code
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
