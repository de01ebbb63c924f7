package resync

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"cnisuite/pkg/helper"
	"cnisuite/pkg/records"
	"cnisuite/pkg/sysctlkeep"
)

// Options of Run.
type Options struct {
	// BinDirs are the directories searched, in order, for the plugin
	// that repairs a record, by the record's plugin type (as CNI_PATH is
	// searched); none: DefaultBinDirs.
	BinDirs []string
	DryRun  bool
	// Root is the records' directory ("" = records.Dir).
	Root string
	// ours checks that a binary found is our plugin (nil: ourPlugin);
	// tests pass a stand-in.
	ours func(path, plugin string) error
}

// ErrFailed is wrapped by Run when some attachment could not be repaired.
var ErrFailed = errors.New("some attachments were not repaired")

// Run repairs every recorded attachment, prints one line per network to
// out, and returns the outcomes.
func Run(ctx context.Context, o Options, out io.Writer) ([]Outcome, error) {
	store := records.Store{Root: o.Root}
	find := newFinder(o.BinDirs, o.ours)
	var jobs []Request
	var bins []string
	var all []Outcome
	var errs []error
	for _, plugin := range Plugins {
		groups, bad, err := byBinary(store, plugin, find)
		errs = append(errs, err)
		all = append(all, bad...)
		for _, bin := range slices.Sorted(maps.Keys(groups)) {
			bins = append(bins, bin)
			jobs = append(jobs, Request{DryRun: o.DryRun, Root: o.Root, Records: groups[bin]})
		}
	}
	// The plugins' helpers run at the same time: each its own attachments.
	got := make([][]Outcome, len(jobs))
	jobErrs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], jobErrs[i] = runHelper(ctx, bins[i], jobs[i])
		}()
	}
	wg.Wait()
	for i := range jobs {
		all = append(all, got[i]...)
	}
	errs = append(errs, jobErrs...)
	summarize(out, all, o.DryRun)
	if o.Root == "" { // the node's records: its holds and /run/sysctl.d too
		if !o.DryRun {
			errs = append(errs, PruneHolds(store, "", "", nil))
		}
		oc, err := restoreSysctlFile(out, o.DryRun)
		errs = append(errs, err)
		all = append(all, oc...)
	}
	for _, oc := range all {
		switch {
		case oc.Error == "":
		case oc.ContainerID == "": // a record that could not be used
			errs = append(errs, fmt.Errorf("%w: %s", ErrFailed, oc.Error))
		default:
			errs = append(errs, fmt.Errorf("%w: %s %s/%s/%s: %s", ErrFailed, oc.Plugin, oc.Network, oc.ContainerID, oc.IfName, oc.Error))
		}
	}
	return all, errors.Join(errs...)
}

// restoreSysctlFile writes /run/sysctl.d's file of the held sysctls again
// when another program removed or changed it (after the helpers, whose
// repairs may hold keys again), and prints a line when it does.
func restoreSysctlFile(out io.Writer, dryRun bool) ([]Outcome, error) {
	changed, err := sysctlkeep.Keeper{}.Restore(dryRun)
	if err != nil || !changed {
		return nil, err
	}
	path := filepath.Join(sysctlkeep.SysctlDir, sysctlkeep.FileName)
	verb := "written again"
	if dryRun {
		verb = "to write again"
	}
	fmt.Fprintf(out, "%s: %s (it no longer listed the sysctls held)\n", path, verb)
	return []Outcome{{Plugin: "sysctlkeep", Missing: []string{path}, Repaired: !dryRun}}, nil
}

// byBinary returns plugin's records as "network/file", by the binary that
// is to repair them, and an outcome that failed for each record that
// cannot be used (not valid, or no plugin of its type): it is skipped and
// reported, the others are repaired. Records are read one at a time, and
// only their names are kept.
func byBinary(store records.Store, plugin string, find *finder) (map[string][]string, []Outcome, error) {
	nets, err := store.Networks(plugin)
	if err != nil {
		return nil, nil, err
	}
	groups := map[string][]string{}
	var bad []Outcome
	var errs []error
	for _, n := range nets {
		files, err := store.Files(plugin, n)
		errs = append(errs, err)
		for _, file := range files {
			r, err := store.Read(plugin, n, file)
			if errors.Is(err, fs.ErrNotExist) {
				continue // DEL removed it since the listing
			}
			bin := ""
			if err == nil {
				bin, err = find.find(plugin, r.Type)
			}
			if err != nil {
				bad = append(bad, Outcome{Plugin: plugin, Network: n, ContainerID: r.ContainerID, IfName: r.IfName, Error: err.Error()})
				continue
			}
			groups[bin] = append(groups[bin], n+"/"+file)
		}
	}
	return groups, bad, errors.Join(errs...)
}

// runHelper runs bin's repair helper for q and decodes its outcomes.
func runHelper(ctx context.Context, bin string, q Request) ([]Outcome, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{helper.Flag, HelperName}, q.Args()...)...)
	// A helper's environment is empty but for PATH: the backends find
	// iptables and nft through it, and tell iptables-nft from legacy by it.
	cmd.Env = []string{"PATH=" + searchPath()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var outs []Outcome
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var oc Outcome
		if jerr := json.Unmarshal(sc.Bytes(), &oc); jerr != nil {
			return outs, fmt.Errorf("%s: output %q: %w", bin, sc.Text(), jerr)
		}
		outs = append(outs, oc)
	}
	if err != nil {
		return outs, fmt.Errorf("%s: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	return outs, nil
}

// defaultPath is PATH when the command runs without one (as from a
// systemd unit).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func searchPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return defaultPath
}

// tally is what one network's outcomes add up to.
type tally struct {
	total, intact, repaired, stale, failed int
	missing                                map[string]bool
}

// summarize prints one line per network:
//
//	net1: 3 attachments: 2 intact, 1 repaired (firewall rules of bridge), 0 stale, 0 failed
func summarize(out io.Writer, outs []Outcome, dryRun bool) {
	nets := map[string]*tally{}
	var names []string
	for _, oc := range outs {
		t := nets[oc.Network]
		if t == nil {
			t = &tally{missing: map[string]bool{}}
			nets[oc.Network] = t
			names = append(names, oc.Network)
		}
		t.add(oc)
	}
	sort.Strings(names)
	verb := "repaired"
	if dryRun {
		verb = "to repair"
	}
	for _, n := range names {
		t := nets[n]
		var what []string
		for m := range t.missing {
			what = append(what, m)
		}
		sort.Strings(what)
		detail := ""
		if len(what) > 0 {
			detail = " (" + strings.Join(what, ", ") + ")"
		}
		fmt.Fprintf(out, "%s: %d attachments: %d intact, %d %s%s, %d stale, %d failed\n",
			n, t.total, t.intact, t.repaired, verb, detail, t.stale, t.failed)
	}
}

func (t *tally) add(oc Outcome) {
	t.total++
	switch {
	case oc.Error != "":
		t.failed++
	case oc.Stale:
		t.stale++
	case len(oc.Missing) == 0:
		t.intact++
	default:
		t.repaired++
	}
	for _, m := range oc.Missing {
		t.missing[m+" of "+oc.Plugin] = true
	}
}
