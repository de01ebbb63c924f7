// Command cnibench measures the cost of a pod's network: the chain bridge
// (+host-local) → tuning → portmap driven through cnitool, against a floor
// chain of stand-ins that only start, parse and answer, in the same run.
// It runs inside scripts/sandbox.sh (make bench); nothing touches the
// machine's own network.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"cnisuite/test/bench/taskstats"
)

type options struct {
	bin, tools, out string
	sizes           []int
	backends        []string
	parallel        int
	leases          int
	hostLocalOnly   bool
	statusOnly      bool
	statusPods      int
	rssOnly         bool
	burstN, burstK  int
	burstAll        int
	busyRules       int
	busyN           int
	busyOnly        bool
	criN, criK      int
	criOnly         bool
	seqOnly         bool
	burstsOnly      bool
	cgroupCPU       string
	exits           *exitLog
	reference       string
	conflist        string
}

func parseFlags() (*options, error) {
	o := &options{}
	var sizes, backends string
	flag.StringVar(&o.bin, "bin", "bin", "directory of our plugin binaries")
	flag.StringVar(&o.tools, "tools", "bin/tools", "directory holding cnitool and floor")
	flag.StringVar(&o.out, "out", "", "write the Markdown report to this file too")
	flag.StringVar(&sizes, "n", "200,500", "numbers of containers, comma-separated")
	flag.StringVar(&backends, "backends", "default,nftables,iptables", "firewall backends (default: the chain with no backend keys, as users write it)")
	flag.IntVar(&o.parallel, "parallel", 40, "parallel ADDs and DELs")
	flag.IntVar(&o.leases, "leases", 10000, "existing leases for the host-local measurement")
	flag.IntVar(&o.burstN, "burst", 120, "pods in the burst")
	flag.IntVar(&o.busyRules, "busy", 10000, "kube-proxy-style NAT rules of the busy-node run (0: none)")
	flag.IntVar(&o.busyN, "busy-n", 60, "containers per chain in the busy-node run")
	flag.IntVar(&o.burstK, "burst-k", 12, "pods of the burst started at a time")
	flag.IntVar(&o.burstAll, "burst-all", 110, "pods of the burst started all at once, as after a node's reboot (0: none)")
	flag.IntVar(&o.criN, "cri", 110, "pods per plugin set in the CRI row (0: no CRI row)")
	flag.IntVar(&o.criK, "cri-k", 10, "pods of the CRI row started at a time")
	flag.BoolVar(&o.criOnly, "cri-only", false, "measure the CRI row alone")
	flag.StringVar(&o.reference, "reference", "bin/tools/reference", "directory of the reference plugins (scripts/reference-plugins.sh), for the CRI row")
	flag.StringVar(&o.conflist, "conflist", "examples/kubernetes.conflist", "the configuration of the CRI row")
	flag.BoolVar(&o.seqOnly, "seq-only", false, "measure the sequential pairs alone (-n, -backends: ADD, CHECK, DEL and their growth)")
	flag.BoolVar(&o.burstsOnly, "bursts-only", false, "measure the bursts alone (-burst, -burst-k, -burst-all, -backends: each burst's ADD and DEL phases right after the floor's)")
	flag.StringVar(&o.cgroupCPU, "cgroup-cpu", "", "the CPU counter of a cgroup holding the whole run (v1 cpuacct.usage or v2 cpu.stat), e.g. /proc/self/fd/9 opened before the sandbox: bursts also report every process's CPU, helpers that outlive their plugin included")
	flag.BoolVar(&o.statusOnly, "status-only", false, "measure the chains' STATUS alone")
	flag.IntVar(&o.statusPods, "status-pods", 100, "pods attached to each chain during its second STATUS row (0: only the row without pods)")
	flag.BoolVar(&o.rssOnly, "rss-only", false, "measure the plugins' peak memory alone")
	flag.BoolVar(&o.busyOnly, "busy-only", false, "measure the busy-node pairs alone (-busy, -busy-n, -backends)")
	flag.BoolVar(&o.hostLocalOnly, "host-local-only", false, "measure host-local alone (no chains)")
	taskstatsFD := flag.Int("taskstats-fd", -1, "a registered TASKSTATS socket (cnibench -taskstats-exec passes one): bursts also report each process's CPU, run-queue wait and times on a CPU, by command name")
	flag.Parse()
	if *taskstatsFD >= 0 {
		o.exits = &exitLog{taskstats.Listen(*taskstatsFD)}
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 20 {
			return nil, fmt.Errorf("-n %q: want numbers of at least 20", s)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.criN < 0 || o.criK < 1 {
		return nil, fmt.Errorf("-cri %d -cri-k %d: want a number of pods and at least one at a time", o.criN, o.criK)
	}
	if o.cgroupCPU != "" {
		if _, err := cgroupCPU(o.cgroupCPU); err != nil {
			return nil, fmt.Errorf("-cgroup-cpu: %w", err)
		}
	}
	if backends != "" {
		o.backends = strings.Split(backends, ",")
	}
	return o, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-taskstats-exec" {
		// Outside the sandbox: the kernel sends exit records to sockets of
		// the initial network namespace only.
		fmt.Fprintln(os.Stderr, "cnibench:", taskstats.Exec(os.Args[2:]))
		os.Exit(2)
	}
	if self, _ := os.Readlink("/proc/self/ns/net"); os.Getenv("CNISUITE_SANDBOX") != "1" || self == "" || self != os.Getenv("CNISUITE_SANDBOX_NETNS") {
		fmt.Fprintln(os.Stderr, "cnibench: run me inside scripts/sandbox.sh (make bench)")
		os.Exit(2)
	}
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnibench:", err)
		os.Exit(2)
	}
	rep, err := runAll(o)
	if rep != nil {
		rep.print(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnibench:", err)
		os.Exit(1)
	}
}
