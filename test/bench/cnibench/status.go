package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// StatusRow is the STATUS of a whole chain, as containerd sends it every
// few seconds, while host-local holds many leases: our chain against the
// floor's, interleaved call by call through libcni.
type StatusRow struct {
	Chain  string `json:"chain"`
	Leases int    `json:"leases"`
	// Pods are the containers attached to the chain while it is measured:
	// bridge and portmap STATUS read one of their records and look for
	// lost rules (issue 23), which a network without pods skips.
	Pods  int   `json:"pods"`
	Ours  Stats `json:"ours"`
	Floor Stats `json:"floor"`
	// PerPlugin is each of our plugins' median STATUS, in ms (bridge's
	// includes the host-local it runs).
	PerPlugin map[string]float64 `json:"per_plugin_median_ms"`
}

// statusSamples is the number of STATUS calls of each chain.
const statusSamples = 200

// status measures each of our chains' STATUS against the floor's, with
// o.leases leases taken the way a busy node takes them: contiguous from the
// start of the range, the last one recorded as last reserved; once with no
// pod on the network and once with o.statusPods attached.
func (rep *report) status(o *options, floorDir string, netnses []string) error {
	counts := []int{0}
	if o.statusPods > 0 {
		counts = append(counts, min(o.statusPods, len(netnses)))
	}
	for _, name := range o.backends {
		for _, pods := range counts {
			fmt.Fprintf(os.Stderr, "cnibench: STATUS of the %s chain with %d leases and %d pods, against the floor's...\n", name, o.leases, pods)
			row, err := statusRow(o, floorDir, name, netnses[:pods])
			if err != nil {
				return err
			}
			rep.Status = append(rep.Status, row)
		}
	}
	return nil
}

func statusRow(o *options, floorDir, name string, pods []string) (*StatusRow, error) {
	dataDir, err := os.MkdirTemp("/var/lib/cni", "status-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	c := &chain{name: name, index: 8}
	if err := seedBusyRange(filepath.Join(dataDir, c.network()), net.IPv4(10, 98, 0, 2), o.leases); err != nil {
		return nil, err
	}
	// STATUS exists from CNI 1.1.0 on; libcni sends nothing for older lists.
	conf := strings.Replace(c.conf(dataDir), `"cniVersion": "1.0.0"`, `"cniVersion": "1.1.0"`, 1)
	list, err := libcni.ConfListFromBytes([]byte(conf))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	m := &meteredExec{peakKB: map[string]map[string]int64{}, times: map[string]map[string][]time.Duration{}}
	clients := []*libcni.CNIConfig{
		libcni.NewCNIConfigWithCacheDir([]string{o.bin}, "/var/lib/cni/bench-status", m),
		libcni.NewCNIConfigWithCacheDir([]string{floorDir}, "/var/lib/cni/bench-status", m),
	}
	detach, err := attachPods(ctx, clients[0], list, pods)
	defer detach()
	if err != nil {
		return nil, fmt.Errorf("attaching the STATUS row's pods to the %s chain: %w", name, err)
	}
	samples := make([][]time.Duration, len(clients))
	for i := 0; i < statusSamples; i++ {
		for k, cni := range clients {
			m.label = []string{"ours", "floor"}[k]
			start := time.Now()
			if err := cni.GetStatusNetworkList(ctx, list); err != nil {
				return nil, fmt.Errorf("STATUS of the %s chain (client %d): %w", name, k, err)
			}
			samples[k] = append(samples[k], time.Since(start))
		}
	}
	row := &StatusRow{Chain: name, Leases: o.leases, Pods: len(pods), Ours: summarise(samples[0]), Floor: summarise(samples[1]), PerPlugin: map[string]float64{}}
	for key, byVerb := range m.times {
		if plugin, ok := strings.CutPrefix(key, "ours/"); ok {
			row.PerPlugin[plugin] = summarise(byVerb["STATUS"]).Median
		}
	}
	return row, nil
}

// attachPods adds a container in each of netnses to the network of list;
// detach deletes those that were added.
func attachPods(ctx context.Context, cni *libcni.CNIConfig, list *libcni.NetworkConfigList, netnses []string) (detach func(), err error) {
	var added []*libcni.RuntimeConf
	detach = func() {
		for _, rt := range added {
			_ = cni.DelNetworkList(ctx, list, rt)
		}
	}
	for i, netns := range netnses {
		rt := &libcni.RuntimeConf{ContainerID: fmt.Sprintf("status-pod-%d", i), NetNS: netns, IfName: "eth0"}
		if _, err := cni.AddNetworkList(ctx, list, rt); err != nil {
			return detach, err
		}
		added = append(added, rt)
	}
	return detach, nil
}

// seedBusyRange writes n reference-format leases from first on, one
// address after another, and records the last as the last reserved.
func seedBusyRange(dir string, first net.IP, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ip := first.To4()
	last := ""
	for i := 0; i < n; i++ {
		last = ip.String()
		body := fmt.Sprintf("status-%d\r\neth0", i)
		if err := os.WriteFile(filepath.Join(dir, last), []byte(body), 0o600); err != nil {
			return err
		}
		ip = nextIPv4(ip)
	}
	return os.WriteFile(filepath.Join(dir, "last_reserved_ip.0"), []byte(last), 0o600)
}

func nextIPv4(ip net.IP) net.IP {
	out := make(net.IP, 4)
	copy(out, ip)
	for i := 3; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}
