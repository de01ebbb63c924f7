package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/nodens"
)

// criPod is a pod the test runs through CRI.
type criPod struct {
	name  string
	id    string
	cfg   *cri.PodSandboxConfig
	ips   []string // as PodSandboxStatus reports them, primary first
	ctr   string   // its container, if it has one
	netns uint64   // inode of its network namespace
	// netnsPath pins it; pausePid holds it, if the runtime runs a pause
	// process (CRI-O drops it by default).
	netnsPath string
	pausePid  int
	gone      bool // stopped and removed
}

// runPod runs a pod with the given sandbox configuration and, when command
// is given, one busybox container running it. Whatever the test does, the
// pod is stopped and removed when it ends.
func (n *criNode) runPod(cfg *cri.PodSandboxConfig, command ...string) (*criPod, error) {
	p := &criPod{name: cfg.Metadata.Name, cfg: cfg}
	id, err := n.cri.runPod(cfg)
	if err != nil {
		return nil, err
	}
	p.id = id
	n.T.Cleanup(func() { // after a failure only
		if !p.gone {
			_ = n.cri.stopPod(p.id)   // the test has failed already;
			_ = n.cri.removePod(p.id) // this only spares the next test
		}
	})
	if p.ips, err = n.cri.podIPs(id); err != nil {
		return nil, err
	}
	if p.pausePid, p.netnsPath, err = n.cri.podSandboxInfo(id); err != nil {
		return nil, err
	} else if p.netns, err = inodeOf(n.Path(runPath(p.netnsPath))); err != nil {
		return nil, fmt.Errorf("pod %s network namespace: %w", p.name, err)
	}
	if len(command) > 0 {
		if p.ctr, err = n.cri.startContainer(id, cfg, "main", command...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// mustRunPod is runPod failing the test on error.
func (n *criNode) mustRunPod(cfg *cri.PodSandboxConfig, command ...string) *criPod {
	n.T.Helper()
	p, err := n.runPod(cfg, command...)
	if err != nil {
		n.T.Fatal(err)
	}
	return p
}

// stopAndRemove stops a pod's container, then the pod (CNI DEL), and
// removes it, as the kubelet does when a pod is deleted.
func (n *criNode) stopAndRemove(p *criPod) error {
	if p.ctr != "" {
		if err := n.cri.stopContainer(p.ctr); err != nil {
			return err
		}
	}
	if err := n.cri.stopPod(p.id); err != nil {
		return err
	}
	if err := n.cri.removePod(p.id); err != nil {
		return err
	}
	p.gone = true
	return nil
}

// podSandboxInfo returns the pause process's PID (0 when there is none)
// and the network namespace path of a pod, from PodSandboxStatus's verbose
// info (containerd and CRI-O give the same fields).
func (c *criClient) podSandboxInfo(podID string) (int, string, error) {
	resp, err := call(c.rt.PodSandboxStatus, &cri.PodSandboxStatusRequest{PodSandboxId: podID, Verbose: true})
	if err != nil {
		return 0, "", fmt.Errorf("PodSandboxStatus %s: %w", podID, err)
	}
	var info struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string } `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil {
		return 0, "", fmt.Errorf("PodSandboxStatus %s info: %w", podID, err)
	}
	for _, ns := range info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return info.Pid, ns.Path, nil
		}
	}
	return 0, "", fmt.Errorf("PodSandboxStatus %s names no network namespace", podID)
}

// runPath spells a path under /var/run as under /run: /var/run is an
// absolute symlink, which n.path would resolve in the test's root, not the
// node's.
func runPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/var/run/"); ok {
		return "/run/" + rest
	}
	return p
}

func inodeOf(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Ino, nil
}

// podLeftovers lists what a stopped pod left on the node: the leftovers of
// every attachment address (veth, state files, rules), conntrack entries
// naming its addresses, and its network namespace, pinned or held.
func (n *criNode) podLeftovers(p *criPod) []string {
	var found []string
	for _, ip := range p.ips {
		found = append(found, n.leftovers(p.id, ip)...)
		found = append(found, conntrackLeft(n.Run, ip)...)
	}
	return append(found, n.netnsLeft(p.netns)...)
}

// requirePodsGone waits (DEL may finish just after the call returns) until
// the pods left nothing, and fails the test with what is left.
func (n *criNode) requirePodsGone(pods ...*criPod) {
	n.T.Helper()
	var left []string
	ok := nodens.WaitFor(30*time.Second, func() bool {
		left = nil
		for _, p := range pods {
			left = append(left, n.podLeftovers(p)...)
		}
		return len(left) == 0
	})
	if !ok {
		n.T.Errorf("after StopPodSandbox and RemovePodSandbox, the node still holds:\n  %s", strings.Join(left, "\n  "))
	}
}

// conntrackLeft lists the connection-tracking entries naming ip, except
// closed TCP connections (TIME_WAIT, CLOSE) and ICMP echo exchanges: those
// only wait out their timer (an echo's 30 s is as long as the wait for
// leftovers, so whether one is still listed depends on how fast the pods
// stopped), the next connection or echo makes an entry of its own, and no
// plugin removes them — the reference plugins neither. Live entries, UDP
// above all, would send a new pod's traffic to the old address.
// Equivalent to: conntrack -L | grep $ip.
func conntrackLeft(run runner, ip string) []string {
	family := "ipv4"
	if strings.Contains(ip, ":") {
		family = "ipv6"
	}
	out, err := run(30*time.Second, "conntrack", "-L", "-f", family)
	if err != nil {
		return []string{err.Error()}
	}
	var found []string
	for _, line := range strings.Split(out, "\n") {
		closed := strings.HasPrefix(line, "tcp") && (strings.Contains(line, " TIME_WAIT ") || strings.Contains(line, " CLOSE ")) ||
			strings.HasPrefix(line, "icmp") && (strings.Contains(line, " type=8 ") || strings.Contains(line, " type=128 "))
		if strings.Contains(line, "="+ip+" ") && !closed {
			found = append(found, "conntrack entry left: "+strings.TrimSpace(line))
		}
	}
	return found
}

// netnsLeft names a pin in the node's /run/netns, or a process in the
// test's cgroups, that still holds the network namespace of inode ino.
// Only those are looked at: the kernel reuses the inode numbers of dead
// namespaces, so a process elsewhere on the machine may have one.
func (n *criNode) netnsLeft(ino uint64) []string {
	var found []string
	pins, _ := os.ReadDir(n.Path("/run/netns")) // none pinned when absent
	for _, pin := range pins {
		if got, err := inodeOf(n.Path("/run/netns/" + pin.Name())); err == nil && got == ino {
			found = append(found, "network namespace left: /run/netns/"+pin.Name())
		}
	}
	for _, pid := range n.CgroupProcs() {
		if got, err := inodeOf(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && got == ino {
			found = append(found, fmt.Sprintf("process %d (%s) left in the pod's network namespace", pid, nodens.Comm(pid)))
		}
	}
	return found
}
