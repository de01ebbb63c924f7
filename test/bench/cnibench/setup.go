package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const benchNet = "bench"

// chain is one measured chain: the floor or ours on one backend, with a
// bridge, subnet, host-port range and container namespaces of its own so
// that chains can be driven side by side, call by call.
type chain struct {
	name     string // "floor", "default" (no backend keys), "logged" (default + logFile), "nftables" or "iptables"
	index    int
	netnses  []string
	portBase int
}

// network is the chain's network name: distinct per chain, so chains that
// share container namespaces keep apart in the runtime's result cache.
func (c *chain) network() string { return benchNet + "-" + c.name }

// conf is the measured chain: bridge with host-local, masquerade and a
// gateway; tuning with one sysctl; portmap with the runtime's mappings.
// The "default" chain names no backend, as users write it
// (examples/kubernetes.conflist, podman's networks): the plugins choose.
func (c *chain) conf(dataDir string) string {
	var bridgeKey, portmapKey string
	switch c.name {
	case "floor", "default":
	case "logged":
		// The per-call log on, at info, on the disk under /var/tmp.
		log := fmt.Sprintf(`"logFile": %q, `, "/var/tmp/cnibench-"+c.network()+".log")
		bridgeKey, portmapKey = log, log
	default:
		bridgeKey = fmt.Sprintf(`"ipMasqBackend": %q, `, c.name)
		portmapKey = fmt.Sprintf(`"backend": %q, `, c.name)
	}
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": "cnibench%d", "isGateway": true, "ipMasq": true, %s
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.%d.0.0/16"}]], "dataDir": %q}},
    {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}},
    {"type": "portmap", %s"capabilities": {"portMappings": true}}
  ]
}`, c.network(), c.index, bridgeKey, 90+c.index, dataDir, portmapKey)
}

// writeConf writes the conflist into a directory of its own.
func writeConf(dir, conf string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-bench.conflist"), []byte(conf), 0o644)
}

// floorDir installs the floor stand-in under each plugin's name (loopback
// too, which containerd's CRI runs for every pod's lo).
func floorDir(tools, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(tools, "floor")
	for _, name := range []string{"bridge", "host-local", "tuning", "portmap", "loopback"} {
		if err := exec.Command("cp", src, filepath.Join(dir, name)).Run(); err != nil {
			return fmt.Errorf("installing floor as %s: %w", name, err)
		}
	}
	return nil
}

// removeNetns deletes the named network namespaces makeNetns made, so
// that a next run in the same sandbox (the package's tests) starts clean.
func removeNetns(paths []string) {
	for _, p := range paths {
		if out, err := exec.Command("ip", "netns", "del", filepath.Base(p)).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cnibench: ip netns del %s: %v: %s\n", filepath.Base(p), err, out)
		}
	}
}

// waitQuiet waits, at most two minutes, until the machine's CPUs are 90 %
// idle over a second: the kernel tears deleted namespaces down in the
// background, on the CPUs the next measurement needs.
func waitQuiet() {
	start := time.Now()
	for time.Since(start) < 2*time.Minute {
		idle0, total0, err0 := cpuTimes()
		time.Sleep(time.Second)
		idle1, total1, err1 := cpuTimes()
		if err0 != nil || err1 != nil {
			fmt.Fprintf(os.Stderr, "cnibench: reading /proc/stat: %v %v; not waiting\n", err0, err1)
			return
		}
		if total1 > total0 && float64(idle1-idle0) >= 0.9*float64(total1-total0) {
			fmt.Fprintf(os.Stderr, "cnibench: machine quiet after %.0f s\n", time.Since(start).Seconds())
			return
		}
	}
	fmt.Fprintln(os.Stderr, "cnibench: machine still busy after 2 minutes; going on")
}

// cpuTimes returns the idle (idle + iowait) and total jiffies of the
// machine's CPUs (/proc/stat).
func cpuTimes() (idle, total uint64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("field %d of %q: %w", i+1, line, err)
		}
		total += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, total, nil
}

// makeNetns creates count named network namespaces under /run/netns.
func makeNetns(prefix string, count int) ([]string, error) {
	var paths []string
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			return paths, fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
		}
		paths = append(paths, "/run/netns/"+name)
	}
	return paths, nil
}
