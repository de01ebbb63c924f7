// Package resync puts back, for every attachment on the node, the firewall
// rules and sysctls other software took away (nft flush ruleset, a
// firewalld reload, iptables-restore, sysctl --system), from the records
// of pkg/records.
//
// The repair itself runs in the plugin that made the attachment: Run
// finds, by each record's plugin type, our plugin in the plugin
// directories (never a program a record names: see finder) and starts it
// once as a helper (pkg/helper, named HelperName) with the records it is
// to look at; the plugin's Serve then
// calls, per record, the plugin's own repair function, which builds the
// rules and sysctls with the very functions its ADD uses, checks them
// against the kernel and installs only what is missing (the backend's
// Ensure, one transaction per family). So a plugin feature (port ranges,
// another chain) is repaired as soon as ADD installs it, and an
// attachment whose rules are intact is not touched.
package resync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"cnisuite/pkg/records"
	"cnisuite/pkg/types"
)

// HelperName is the helper a plugin answers with Serve.
const HelperName = "cnisuite-repair"

// Outcome is what a plugin found and did for one record: one JSON line of
// the helper's output.
type Outcome struct {
	Plugin      string `json:"plugin"`
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	// Missing lists what was gone ("firewall rules", "net.ipv4.ip_forward").
	Missing []string `json:"missing,omitempty"`
	// Repaired is set when Missing was put back (never in a dry run).
	Repaired bool `json:"repaired,omitempty"`
	// Stale is set when the attachment's netns is gone: GC's business,
	// nothing is re-created for it.
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
}

// RepairFunc looks at one attachment and, unless dryRun, puts back what is
// missing; it returns what was missing.
type RepairFunc func(ctx context.Context, r records.Record, dryRun bool) (missing []string, err error)

// Request is what Run asks of a helper: its arguments.
type Request struct {
	DryRun bool
	// Root is the records' directory ("" = records.Dir).
	Root string
	// Records are "network/file" names of the plugin's records.
	Records []string
}

// Args renders the request as helper arguments.
func (q Request) Args() []string {
	args := []string{"-root", q.Root}
	if q.DryRun {
		args = append(args, "-n")
	}
	return append(args, q.Records...)
}

// ParseArgs reads the arguments Args wrote.
func ParseArgs(args []string) (Request, error) {
	var q Request
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-n":
			q.DryRun = true
		case "-root":
			if i+1 == len(args) {
				return q, fmt.Errorf("-root without a directory")
			}
			i++
			q.Root = args[i]
		default:
			if strings.Count(args[i], "/") != 1 {
				return q, fmt.Errorf("record %q: want network/file", args[i])
			}
			q.Records = append(q.Records, args[i])
		}
	}
	return q, nil
}

// Serve is the body of a plugin's HelperName helper: it repairs each
// record of the request and writes one Outcome per record to out.
func Serve(ctx context.Context, plugin string, args []string, out io.Writer, repair RepairFunc) error {
	q, err := ParseArgs(args)
	if err != nil {
		return err
	}
	job := repairJob{store: records.Store{Root: q.Root}, plugin: plugin, dryRun: q.DryRun, repair: repair}
	outs := make([]*Outcome, len(q.Records))
	// A few attachments at a time, as a runtime runs ADDs: each repair
	// waits mostly on its own netlink transactions.
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, name := range q.Records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			outs[i] = job.one(ctx, name)
		}()
	}
	wg.Wait()
	enc := json.NewEncoder(out)
	for _, o := range outs {
		if o == nil {
			continue // DEL removed it since it was listed: nothing to repair
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return nil
}

// workers is how many attachments a helper repairs at once.
const workers = 4

// repairJob is what a helper's repairs share: the plugin's records, and
// how to repair one.
type repairJob struct {
	store  records.Store
	plugin string
	dryRun bool
	repair RepairFunc
}

// one repairs the record name ("network/file"); nil when it is gone.
func (j repairJob) one(ctx context.Context, name string) *Outcome {
	network, file, _ := strings.Cut(name, "/")
	o := &Outcome{Plugin: j.plugin, Network: network}
	r, release, err := j.store.ReadLocked(ctx, j.plugin, network, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		defer release()
		o.ContainerID, o.IfName = r.ContainerID, r.IfName
		if o.Stale = !netnsExists(r.Netns); !o.Stale {
			o.Missing, err = j.repair(ctx, r, j.dryRun)
			o.Repaired = err == nil && len(o.Missing) > 0 && !j.dryRun
		}
	}
	if err != nil {
		o.Error = err.Error()
	}
	return o
}

// Status is a plugin's STATUS look at the attachments of its network: when
// one (the first recorded) has lost rules or sysctls, the error (code 51)
// names the network and what is gone. It reads one directory listing and,
// when the network has attachments, one record, and runs repair as a dry
// run: no process starts. A network without records has nothing to lose.
//
// Only an attachment that is still there counts: DEL removes the record
// (under its lock) before the rules, so a loss is confirmed by reading
// the record again under that lock and checking again; a record gone
// meanwhile was a pod being deleted, not lost connectivity.
func Status(ctx context.Context, store records.Store, plugin, network string, repair RepairFunc) error {
	r, n, err := store.First(plugin, network)
	if err != nil || n == 0 || !netnsExists(r.Netns) {
		return nil // a pod gone without DEL is GC's, not lost connectivity
	}
	missing, err := repair(ctx, r, true)
	if err != nil || len(missing) == 0 {
		return nil
	}
	if missing = confirmLoss(ctx, store, r, repair); len(missing) == 0 {
		return nil
	}
	return types.Errorf(types.ErrLimitedConnectivity, "network %q: %s of its attachments gone (%d %s attachment(s); cnisuite resync puts them back)",
		network, strings.Join(missing, " and "), n, plugin)
}

// confirmLoss checks the attachment of r again with its record's lock
// held, as a repair does, and returns what is gone; nothing when the
// record is gone (a DEL or GC took it) or its netns is.
func confirmLoss(ctx context.Context, store records.Store, r records.Record, repair RepairFunc) []string {
	r, release, err := store.ReadLocked(ctx, r.Plugin, r.Network, r.File)
	if err != nil {
		return nil
	}
	defer release()
	if !netnsExists(r.Netns) {
		return nil
	}
	missing, err := repair(ctx, r, true)
	if err != nil {
		return nil
	}
	return missing
}
