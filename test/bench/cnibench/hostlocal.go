package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// hostLocal times ADD+DEL pairs of the host-local binary alone, against a
// data directory already holding `existing` leases in the reference format.
func hostLocal(bin, netns string, existing, pairs int) (Stats, error) {
	dataDir, err := os.MkdirTemp("/var/lib/cni", "hl-bench-")
	if err != nil {
		return Stats{}, err
	}
	defer os.RemoveAll(dataDir)
	if err := seedLeases(filepath.Join(dataDir, "hlbench"), existing); err != nil {
		return Stats{}, err
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"hlbench","type":"host-local",
"ipam":{"type":"host-local","ranges":[[{"subnet":"10.100.0.0/16"}]],"dataDir":%q}}`, dataDir)
	var samples []time.Duration
	for i := 0; i < pairs; i++ {
		start := time.Now()
		for _, verb := range []string{"ADD", "DEL"} {
			if err := runPlugin(filepath.Join(bin, "host-local"), verb, netns, fmt.Sprintf("hl-%d", i), conf); err != nil {
				return Stats{}, err
			}
		}
		samples = append(samples, time.Since(start))
	}
	return summarise(samples), nil
}

// seedLeases writes n lease files exactly as the reference plugin does.
func seedLeases(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		ip := fmt.Sprintf("10.100.%d.%d", 10+i/250, 1+i%250)
		body := fmt.Sprintf("seed-%d\r\neth0", i)
		if err := os.WriteFile(filepath.Join(dir, ip), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func runPlugin(path, verb, netns, id, conf string) error {
	cmd := exec.Command(path)
	cmd.Env = []string{"CNI_COMMAND=" + verb, "CNI_CONTAINERID=" + id, "CNI_NETNS=" + netns,
		"CNI_IFNAME=eth0", "CNI_PATH=" + filepath.Dir(path)}
	cmd.Stdin = bytes.NewReader([]byte(conf))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("host-local %s: %v: %s", verb, err, out.String())
	}
	return nil
}
