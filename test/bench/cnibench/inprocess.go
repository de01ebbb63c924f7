package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
)

// meteredExec runs plugins for libcni and records each one's wall time per
// verb; with rssVia set, it runs them through GNU time instead and records
// their peak memory.
//
// The peak cannot be read from this process's own wait: Go starts a child
// with vfork semantics (the child borrows this process's memory until its
// exec), and the kernel carries the borrowed memory's high-water mark into
// the child's accounting — every plugin would show this benchmark's own
// size (10.4–11.3 MiB in rounds 0 to 8). GNU time forks from its own small
// process, so the mark it reads is the plugin's.
type meteredExec struct {
	invoke.RawExec
	version.PluginDecoder
	mu     sync.Mutex
	peakKB map[string]map[string]int64           // plugin → verb → KiB
	times  map[string]map[string][]time.Duration // "backend/plugin" → verb → wall time
	label  string                                // the backend being measured
	rssVia string                                // GNU time's path, for the memory pass
}

func (m *meteredExec) ExecPlugin(ctx context.Context, path string, stdin []byte, env []string) ([]byte, error) {
	if m.rssVia != "" {
		return m.execMeasuringRSS(ctx, path, stdin, env)
	}
	start := time.Now()
	out, err := startPlugin(ctx, path, stdin, env, path)
	m.timed(filepath.Base(path), commandOf(env), time.Since(start))
	return out, err
}

// execMeasuringRSS runs the plugin under GNU time and records its peak
// resident set (%M, KiB) from the file time writes.
// Equivalent to: /usr/bin/time -q -f %M -o <file> <plugin>
func (m *meteredExec) execMeasuringRSS(ctx context.Context, path string, stdin []byte, env []string) ([]byte, error) {
	f, err := os.CreateTemp("", "cnibench-rss-")
	if err != nil {
		return nil, err
	}
	f.Close()
	defer os.Remove(f.Name())
	out, runErr := startPlugin(ctx, path, stdin, env, m.rssVia, "-q", "-f", "%M", "-o", f.Name(), path)
	if data, err := os.ReadFile(f.Name()); err == nil {
		if kb, convErr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); convErr == nil {
			m.record(filepath.Base(path), commandOf(env), kb)
		}
	}
	return out, runErr
}

// startPlugin runs argv with the plugin's environment and stdin and returns
// its stdout; a failure names the plugin at path with what it printed.
func startPlugin(ctx context.Context, path string, stdin []byte, env []string, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v: %s%s", filepath.Base(path), err, out.String(), errOut.String())
	}
	return out.Bytes(), nil
}

func (m *meteredExec) record(plugin, verb string, kb int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.peakKB[plugin] == nil {
		m.peakKB[plugin] = map[string]int64{}
	}
	if kb > m.peakKB[plugin][verb] {
		m.peakKB[plugin][verb] = kb
	}
}

func (m *meteredExec) timed(plugin, verb string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := m.label + "/" + plugin
	if m.times[key] == nil {
		m.times[key] = map[string][]time.Duration{}
	}
	m.times[key][verb] = append(m.times[key][verb], d)
}

func commandOf(env []string) string {
	for _, kv := range env {
		if len(kv) > 12 && kv[:12] == "CNI_COMMAND=" {
			return kv[12:]
		}
	}
	return "?"
}

// inProcess times the chain through libcni inside this process, which
// removes cnitool's own start-up from the figure, and meters memory.
func inProcess(pluginDir, conf string, netnses []string, m *meteredExec) (map[string][]time.Duration, error) {
	list, err := libcni.ConfListFromBytes([]byte(conf))
	if err != nil {
		return nil, err
	}
	cni := libcni.NewCNIConfigWithCacheDir([]string{pluginDir}, "/var/lib/cni/bench-inprocess", m)
	ctx := context.Background()
	out := map[string][]time.Duration{}
	rts := make([]*libcni.RuntimeConf, len(netnses))
	for i, n := range netnses {
		rts[i] = &libcni.RuntimeConf{ContainerID: fmt.Sprintf("inproc-%d", i), NetNS: n, IfName: "eth0",
			CapabilityArgs: map[string]any{"portMappings": []map[string]any{
				{"hostPort": 50000 + i, "containerPort": 80, "protocol": "tcp"}}}}
	}
	verbs := []struct {
		name string
		fn   func(*libcni.RuntimeConf) error
	}{
		{"add", func(rt *libcni.RuntimeConf) error { _, err := cni.AddNetworkList(ctx, list, rt); return err }},
		{"check", func(rt *libcni.RuntimeConf) error { return cni.CheckNetworkList(ctx, list, rt) }},
		{"del", func(rt *libcni.RuntimeConf) error { return cni.DelNetworkList(ctx, list, rt) }},
	}
	for _, v := range verbs {
		for _, rt := range rts {
			start := time.Now()
			if err := v.fn(rt); err != nil {
				return out, fmt.Errorf("libcni %s %s: %w", v.name, rt.ContainerID, err)
			}
			out[v.name] = append(out[v.name], time.Since(start))
		}
	}
	return out, nil
}
