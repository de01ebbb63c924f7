package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Upgrade is host-local's cost on a node that switches to our binaries with
// many reference-format leases already on disk: our first call finds no
// index of ours and builds one.
type Upgrade struct {
	Leases int `json:"leases"`
	// FirstMS is the first ADD on the freshly written directory.
	FirstMS float64 `json:"first_add_ms"`
	// ScanMS reads every lease file once, in this process, on a twin
	// directory written at the same moment: the floor of any full scan.
	ScanMS float64 `json:"full_scan_ms"`
	// Next is the 20 ADDs after the first; Empty the same on an empty
	// directory of the same disk, interleaved with them.
	Next  Stats `json:"next_adds"`
	Empty Stats `json:"empty_adds"`
}

// upgradeAtScale measures on the disk under /var/tmp, never on a tmpfs:
// file-system work costs ten times more there, and users keep
// /var/lib/cni on disk.
func upgradeAtScale(bin, netns string, leases int) (*Upgrade, error) {
	root, err := os.MkdirTemp("/var/tmp", "cnibench-upgrade-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	up := &Upgrade{Leases: leases}
	ours, twin, empty := filepath.Join(root, "ours"), filepath.Join(root, "twin"), filepath.Join(root, "empty")
	for _, d := range []string{ours, twin} {
		if err := seedLeases(filepath.Join(d, "hlbench"), leases); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := readAll(filepath.Join(twin, "hlbench")); err != nil {
		return nil, err
	}
	up.ScanMS = ms(time.Since(start))
	first, err := timedAdds(bin, netns, ours, "first", 1)
	if err != nil {
		return nil, err
	}
	up.FirstMS = first[0].Seconds() * 1000
	// Interleaved, one ADD on each directory in turn: the disk still
	// writes out the 20,000 files just seeded, and both sides must see the
	// same disk.
	var next, base []time.Duration
	for i := 0; i < 20; i++ {
		n, err := timedAdds(bin, netns, ours, fmt.Sprintf("next-%d", i), 1)
		if err != nil {
			return nil, err
		}
		b, err := timedAdds(bin, netns, empty, fmt.Sprintf("empty-%d", i), 1)
		if err != nil {
			return nil, err
		}
		next, base = append(next, n...), append(base, b...)
	}
	up.Next, up.Empty = summarise(next), summarise(base)
	return up, nil
}

// readAll reads every file of dir once.
func readAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// timedAdds times count host-local ADDs of new containers on dataDir.
func timedAdds(bin, netns, dataDir, prefix string, count int) ([]time.Duration, error) {
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"hlbench","type":"host-local",
"ipam":{"type":"host-local","ranges":[[{"subnet":"10.100.0.0/16"}]],"dataDir":%q}}`, dataDir)
	var out []time.Duration
	for i := 0; i < count; i++ {
		start := time.Now()
		if err := runPlugin(filepath.Join(bin, "host-local"), "ADD", netns, fmt.Sprintf("%s-%d", prefix, i), conf); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
