// Package crirow measures the runtime's view of pod networking: one
// containerd 1.6 with its CRI plugin per plugin set (ours, the reference's,
// the do-nothing floor's), pods started and removed through the CRI as the
// kubelet does, the sets interleaved batch by batch. cnibench prints its
// rows (make bench).
package crirow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criTimeout bounds one CRI call: RunPodSandbox runs the whole chain.
const criTimeout = 2 * time.Minute

// Row is the runtime's view of one plugin set: containerd's CRI
// RunPodSandbox, and StopPodSandbox+RemovePodSandbox, pod by pod.
type Row struct {
	Plugins    string  `json:"plugins"` // "ours", "reference", "floor"
	Backend    string  `json:"backend,omitempty"`
	N          int     `json:"n"`
	K          int     `json:"k"`
	RunP50     float64 `json:"run_p50_ms"`
	RunP99     float64 `json:"run_p99_ms"`
	StopRmP50  float64 `json:"stop_remove_p50_ms"`
	StopRmP99  float64 `json:"stop_remove_p99_ms"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
}

// Options are what the row measures: N pods per plugin set, K at a time,
// with the plugin directories of each set and the conflist users write.
type Options struct {
	N, K                   int
	Ours, Reference, Floor string // plugin directories
	Conflist               string // path of the configuration, e.g. examples/kubernetes.conflist
}

// sets are the plugin sets of the CRI row, in the order of the first
// round: ours first, on a node with nothing of anyone's yet, so that the
// network's firewall backend is chosen as on a fresh node.
var sets = []string{"ours", "reference", "floor"}

// Measure starts one containerd per plugin set and runs o.N pods on each,
// o.K at a time, the sets interleaved batch by batch (their order
// rotating every round), then stops and removes them the same way.
func Measure(o Options) ([]*Row, error) {
	if err := checkBinaries(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(o.Reference, "bridge")); o.Reference == "" || err != nil {
		return nil, errNoReference
	}
	if err := mountCgroups(); err != nil {
		return nil, err
	}
	archive, err := pauseArchive("/run/cnibench-cri")
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{"ours": o.Ours, "reference": o.Reference, "floor": o.Floor}
	var nodes []*runtimeNode
	defer func() {
		for _, n := range nodes {
			if err := n.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "cnibench:", err)
			}
		}
	}()
	for i, name := range sets {
		conflist, err := criConflist(o.Conflist, i, name)
		if err != nil {
			return nil, err
		}
		n, err := startContainerd(name, dirs[name], conflist, archive)
		if n != nil {
			nodes = append(nodes, n)
		}
		if err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "cnibench: CRI, containerd %s: %d pods per plugin set, %d at a time, sets interleaved...\n", runtimeVersion(), o.N, o.K)
	return measureCRI(nodes, o.N, o.K, func(rows []*Row) { rows[0].Backend = recordedBackend() }), nil
}

// measureCRI runs the rounds: start, then (after calling started) stop
// and remove.
func measureCRI(nodes []*runtimeNode, n, k int, started func([]*Row)) []*Row {
	run := make([][]time.Duration, len(nodes))
	stop := make([][]time.Duration, len(nodes))
	pods := make([][]string, len(nodes))
	rows := make([]*Row, len(nodes))
	for i, nd := range nodes {
		rows[i] = &Row{Plugins: nd.name, N: n, K: k}
	}
	rounds := (n + k - 1) / k
	for r := 0; r < rounds; r++ {
		size := min(k, n-r*k)
		for j := range nodes {
			i := (j + r) % len(nodes)
			ids, ds, errs := nodes[i].runBatch(r*k, size)
			pods[i] = append(pods[i], ids...)
			run[i] = append(run[i], ds...)
			rows[i].count(errs)
		}
	}
	started(rows)
	for r := 0; r < rounds; r++ {
		for j := range nodes {
			i := (j + r) % len(nodes)
			batch := pods[i][min(r*k, len(pods[i])):min((r+1)*k, len(pods[i]))]
			ds, errs := nodes[i].stopBatch(batch)
			stop[i] = append(stop[i], ds...)
			rows[i].count(errs)
		}
	}
	for i, row := range rows {
		row.RunP50, row.RunP99 = percentile(run[i], 50), percentile(run[i], 99)
		row.StopRmP50, row.StopRmP99 = percentile(stop[i], 50), percentile(stop[i], 99)
	}
	return rows
}

func (row *Row) count(errs []error) {
	for _, err := range errs {
		if row.Errors == 0 {
			row.FirstError = err.Error()
		}
		row.Errors++
	}
}

// runBatch runs size pods at once, numbered from first, and returns the
// IDs of those that started and every successful call's latency.
func (n *runtimeNode) runBatch(first, size int) ([]string, []time.Duration, []error) {
	var mu sync.Mutex
	var ids []string
	var ds []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for p := first; p < first+size; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			name := fmt.Sprintf("%s-%d", n.name, p)
			ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
			defer cancel()
			start := time.Now()
			resp, err := n.rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: n.podConfig(name)})
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("RunPodSandbox %s: %w", name, err))
				return
			}
			ids, ds = append(ids, resp.PodSandboxId), append(ds, d)
		}(p)
	}
	wg.Wait()
	return ids, ds, errs
}

// stopBatch stops and removes the pods at once, as the kubelet does when
// pods go, and returns each pod's StopPodSandbox+RemovePodSandbox time.
func (n *runtimeNode) stopBatch(ids []string) ([]time.Duration, []error) {
	var mu sync.Mutex
	var ds []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			d, err := n.stopRemove(id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ds = append(ds, d)
		}(id)
	}
	wg.Wait()
	return ds, errs
}

// stopRemove stops then removes one pod and returns the time both took.
func (n *runtimeNode) stopRemove(id string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*criTimeout)
	defer cancel()
	start := time.Now()
	if _, err := n.rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return 0, fmt.Errorf("StopPodSandbox %s on %s: %w", id, n.name, err)
	}
	if _, err := n.rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return 0, fmt.Errorf("RemovePodSandbox %s on %s: %w", id, n.name, err)
	}
	return time.Since(start), nil
}

// podConfig is a pod as the kubelet asks for one by default: network and
// IPC shared by the pod, a PID namespace per container, no host ports.
func (n *runtimeNode) podConfig(name string) *cri.PodSandboxConfig {
	return &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: "uid-" + name},
		Hostname: name,
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent: n.cgroup,
			SecurityContext: &cri.LinuxSandboxSecurityContext{NamespaceOptions: &cri.NamespaceOption{
				Network: cri.NamespaceMode_POD, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD,
			}},
		},
	}
}

// percentile is the nearest-rank percentile of the samples, in ms.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n), 1-based
	return float64(sorted[max(rank, 1)-1].Microseconds()) / 1000
}

// recordedBackend is the firewall backend our plugins recorded for the
// CRI network while its pods run; "" when there is no record.
func recordedBackend() string {
	var found []string
	_ = filepath.WalkDir("/run/cnisuite/fw-backend", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "backend" && strings.Contains(p, "k8s-pod-network-ours") {
			b, _ := os.ReadFile(p)
			found = append(found, strings.TrimSpace(string(b)))
		}
		return nil
	})
	return strings.Join(found, ",")
}

// Markdown renders the CRI rows and their ratios as table rows.
func Markdown(b *strings.Builder, rows []*Row) {
	byName := map[string]*Row{}
	for _, r := range rows {
		byName[r.Plugins] = r
		backend := ""
		if r.Backend != "" {
			backend = ", firewall " + r.Backend
		}
		fmt.Fprintf(b, "| CRI (containerd %s), %s%s: %d pods %d at a time, RunPodSandbox p50 / p99; Stop+RemovePodSandbox p50 / p99; errors | %.1f / %.1f ms; %.1f / %.1f ms; %d%s |\n",
			runtimeVersion(), r.Plugins, backend, r.N, r.K, r.RunP50, r.RunP99, r.StopRmP50, r.StopRmP99, r.Errors, firstError(r))
	}
	ratios(b, byName["ours"], byName["floor"], byName["reference"])
}

// ratios renders ours against the floor's and the reference's.
func ratios(b *strings.Builder, ours, floor, ref *Row) {
	if ours == nil || floor == nil || ref == nil || floor.RunP50 == 0 || ref.RunP50 == 0 || ours.RunP50 == 0 {
		return
	}
	fmt.Fprintf(b, "| CRI RunPodSandbox ours ÷ floor plugins, p50 / p99; ours ÷ reference, p50; network's share of sandbox start (1 − floor ÷ ours, p50) | %.2f / %.2f; %.2f; %.0f %% |\n",
		ours.RunP50/floor.RunP50, ours.RunP99/floor.RunP99, ours.RunP50/ref.RunP50, 100*(1-floor.RunP50/ours.RunP50))
	fmt.Fprintf(b, "| CRI Stop+RemovePodSandbox ours ÷ floor plugins, p50 / p99; ours ÷ reference, p50 | %.2f / %.2f; %.2f |\n",
		ours.StopRmP50/floor.StopRmP50, ours.StopRmP99/floor.StopRmP99, ours.StopRmP50/ref.StopRmP50)
}

func firstError(r *Row) string {
	if r.FirstError == "" {
		return ""
	}
	return " (first: " + strings.ReplaceAll(r.FirstError, "|", "/") + ")"
}

// errNoReference says how to get the reference plugins for the CRI row.
var errNoReference = errors.New("the CRI row needs the reference plugins: -reference DIR (make bench builds them with scripts/reference-plugins.sh)")
