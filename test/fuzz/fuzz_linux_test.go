package fuzz

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// Budgets and selection; each flag also reads an environment variable, so
// that make targets and CI can set them without -args.
var (
	flagSeed     = flag.Uint64("fuzz.seed", envUint("CNISUITE_FUZZ_SEED", 1), "seed of every input (env CNISUITE_FUZZ_SEED)")
	flagInputs   = flag.Int("fuzz.inputs", int(envUint("CNISUITE_FUZZ_INPUTS", 300)), "mutated inputs per plugin (env CNISUITE_FUZZ_INPUTS)")
	flagOnly     = flag.String("fuzz.only", os.Getenv("CNISUITE_FUZZ_ONLY"), "plugin or plugin:index list, comma-separated: run only these (env CNISUITE_FUZZ_ONLY)")
	flagWorkers  = flag.Int("fuzz.workers", int(envUint("CNISUITE_FUZZ_WORKERS", 4)), "batches run at the same time, each in its own namespaces (env CNISUITE_FUZZ_WORKERS)")
	flagMinimize = flag.Bool("fuzz.minimize", os.Getenv("CNISUITE_FUZZ_MINIMIZE") == "1", "minimize the first failing input of each kind (env CNISUITE_FUZZ_MINIMIZE=1)")
	flagReports  = flag.Int("fuzz.reports", int(envUint("CNISUITE_FUZZ_REPORTS", 3)), "inputs printed whole per kind of failure (env CNISUITE_FUZZ_REPORTS)")
)

// maxBatch inputs at most share a node and a container namespace.
const maxBatch = 200

// envUint reads an unsigned number from the environment, def when unset.
func envUint(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// TestFuzzBinaries runs every verb of seeded, mutated configurations of
// every plugin binary inside throwaway namespaces and fails on any protocol
// violation or leftover; see README.md.
func TestFuzzBinaries(t *testing.T) {
	sandbox.Require(t)
	sel := parseOnly(*flagOnly)
	for _, plugin := range Plugins {
		idxs := sel.indexes(plugin, *flagInputs)
		if len(idxs) == 0 {
			continue
		}
		t.Run(plugin, func(t *testing.T) {
			start := time.Now()
			c := &collector{seed: *flagSeed}
			runBatches(t, plugin, idxs, c)
			t.Logf("%s: %d inputs × %d verbs, seed %d, in %v", plugin, len(idxs), len(verbs), *flagSeed,
				time.Since(start).Round(time.Millisecond))
			c.report(t)
		})
	}
}

// runBatches splits the inputs into batches, one per worker when they
// are few, and runs them on the workers, each batch a subtest. Plugins
// mostly wait (for exec, the kernel, a delegate), so a few more workers
// than cores pay off.
func runBatches(t *testing.T, plugin string, idxs []int, c *collector) {
	workers := max(1, *flagWorkers)
	size := min(maxBatch, (len(idxs)+workers-1)/workers)
	batches := make(chan []int, len(idxs)/size+1)
	for i := 0; i < len(idxs); i += size {
		batches <- idxs[i:min(i+size, len(idxs))]
	}
	close(batches)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				t.Run(fmt.Sprintf("%d-%d", b[0], b[len(b)-1]), func(t *testing.T) { runBatch(t, plugin, b, c) })
			}
		}()
	}
	wg.Wait()
}

// runBatch checks that the plugin's base configurations succeed in a fresh
// node, then runs the batch's mutated inputs there.
func runBatch(t *testing.T, plugin string, idxs []int, c *collector) {
	w := newWorld(t, plugin)
	// Workers share /run: a base attachment is the batch's own, as the
	// spec asks (no two operations on one container at a time).
	w.batch = idxs[0]
	// The first pass makes what stays by design (a bridge, a firewall
	// backend's tables and base chains) and is not checked for leftovers;
	// the second is, like every mutated input after it.
	for pass := range 2 {
		for i := range Bases[plugin] {
			w.runBase(t, i, pass, c.seed)
		}
	}
	for _, idx := range idxs {
		p, dir, err := w.paths(idx)
		if err != nil {
			t.Fatal(err)
		}
		res := w.runInput(NewInput(c.seed, plugin, idx, p, true), dir)
		if *flagMinimize && len(res.problems) > 0 && c.firstOfKind(res) {
			res.minimized = w.minimize(res)
		}
		c.add(res)
		os.RemoveAll(dir)
	}
}

// runBase runs base configuration i unmutated; every verb must succeed,
// and from the second pass on leave nothing behind.
func (w *world) runBase(t *testing.T, i, pass int, seed uint64) {
	p, dir, err := w.paths(-1 - i)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	in := BaseInput(seed, w.plugin, i, p, w.batch)
	res := w.runInput(in, dir)
	var bad []string
	for _, pr := range res.problems {
		if pass > 0 || !strings.HasPrefix(pr, "leftover") {
			bad = append(bad, pr)
		}
	}
	for _, o := range res.outcomes {
		if o.Exit != 0 {
			bad = append(bad, fmt.Sprintf("%s: the base configuration must succeed", o.Verb))
		}
	}
	if res.problems = bad; len(bad) > 0 {
		t.Fatalf("base configuration %s/%s fails, fix it first:\n%s", w.plugin, in.Base, res.report(seed))
	}
}

// collector groups the failures of one plugin by signature.
type collector struct {
	seed  uint64
	mu    sync.Mutex
	bySig map[string][]*result
	count int
	took  map[string]time.Duration // per verb
	fails map[string]int           // per verb: non-zero exits
}

// add records one input's result: its statistics, and it when it failed.
func (c *collector) add(r *result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	if c.took == nil {
		c.took, c.fails = map[string]time.Duration{}, map[string]int{}
	}
	for _, o := range r.outcomes {
		c.took[o.Verb] += o.Took
		if o.Exit != 0 {
			c.fails[o.Verb]++
		}
	}
	if len(r.problems) == 0 {
		return
	}
	if c.bySig == nil {
		c.bySig = map[string][]*result{}
	}
	sig := r.signature()
	if len(c.bySig[sig]) < *flagReports {
		c.bySig[sig] = append(c.bySig[sig], r)
	} else {
		c.bySig[sig] = append(c.bySig[sig], &result{in: Input{Index: r.in.Index}})
	}
}

// firstOfKind reports whether no failure like r was collected yet.
func (c *collector) firstOfKind(r *result) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bySig[r.signature()]) == 0
}

// report fails the test once per kind of failure, printing its first
// inputs whole and the indexes of the others.
func (c *collector) report(t *testing.T) {
	for _, s := range slices.Sorted(maps.Keys(c.bySig)) {
		rs := c.bySig[s]
		var idx []string
		for _, r := range rs {
			idx = append(idx, strconv.Itoa(r.in.Index))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d input(s) fail with: %s\ninputs: %s\n", len(rs), s, strings.Join(idx, ","))
		for _, r := range rs[:min(len(rs), *flagReports)] {
			b.WriteString(r.report(c.seed))
		}
		t.Error(b.String())
	}
	var stats []string
	for _, v := range verbs {
		stats = append(stats, fmt.Sprintf("%s %v (%d refused)", v, c.took[v].Round(time.Millisecond), c.fails[v]))
	}
	t.Logf("%d inputs run, %d kinds of failure; time in plugins: %s", c.count, len(c.bySig), strings.Join(stats, ", "))
}

// selection is what CNISUITE_FUZZ_ONLY asks for: whole plugins, or single
// inputs of a plugin.
type selection map[string][]int

// parseOnly reads "plugin" and "plugin:index" items, comma-separated.
func parseOnly(s string) selection {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	sel := selection{}
	for _, item := range strings.Split(s, ",") {
		plugin, idx, found := strings.Cut(strings.TrimSpace(item), ":")
		if _, ok := sel[plugin]; !ok {
			sel[plugin] = []int{}
		}
		if n, err := strconv.Atoi(idx); found && err == nil {
			sel[plugin] = append(sel[plugin], n)
		}
	}
	return sel
}

// indexes returns the inputs of plugin to run: 0..n-1 unless the
// selection names the plugin (all of them, or only the given ones).
func (s selection) indexes(plugin string, n int) []int {
	if s != nil {
		only, ok := s[plugin]
		if !ok {
			return nil
		}
		if len(only) > 0 {
			return only
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
