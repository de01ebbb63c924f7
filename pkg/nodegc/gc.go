// Package nodegc removes what cnisuite's plugins left on a node for
// attachments the container runtime no longer knows (cnisuite gc, and its
// older name cnisuite-gc): the cleanup after switching a node back to the
// reference plugins, whose DEL does not know our rules, leases index or
// tuning state. It never touches an attachment the runtime knows.
//
// The runtime's knowledge is libcni's result cache (<cachedir>/results,
// /var/lib/cni/results for containerd, CRI-O and podman's CNI backend): an
// attachment is live while its cache entry exists, and libcni removes the
// entry only after a successful DEL. For every network of confdir, every
// plugin of ours in it (bridge, which passes GC on to host-local, portmap,
// tuning) is run from bindir with CNI_COMMAND=GC and the live attachments
// of that network as cni.dev/valid-attachments.
package nodegc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cnisuite/pkg/types"
)

// Options of Run.
type Options struct {
	// BinDir holds cnisuite's plugins (after a rollback, not the
	// runtime's plugin directory).
	BinDir string
	// ConfDir is the runtime's network configuration directory.
	ConfDir string
	// CacheDir is libcni's cache directory, holding results/.
	CacheDir string
	// DryRun prints what would be run and runs nothing.
	DryRun bool
}

// ours are the plugins whose GC removes state of ours; host-local is
// reached through bridge's IPAM.
var ours = map[string]bool{"bridge": true, "portmap": true, "tuning": true}

// network is one network configuration: its name and plugin entries.
type network struct {
	Name    string           `json:"name"`
	Plugins []map[string]any `json:"plugins"`
	file    string
}

// Run collects the live attachments and the networks, then runs GC.
func Run(o Options, out io.Writer) error {
	live, err := liveAttachments(filepath.Join(o.CacheDir, "results"))
	if err != nil {
		return err
	}
	nets, err := networks(o.ConfDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nets {
		for _, p := range n.Plugins {
			kind, _ := p["type"].(string)
			if !ours[kind] {
				continue
			}
			valid := live[n.Name]
			fmt.Fprintf(out, "%s: %s GC keeping %d live attachment(s)\n", n.Name, kind, len(valid))
			if !o.DryRun {
				errs = append(errs, gc(o.BinDir, kind, gcConfig(n.Name, p, valid)))
			}
		}
	}
	return errors.Join(errs...)
}

// cacheEntry is what libcni writes for each attachment it added.
type cacheEntry struct {
	ContainerID string `json:"containerId"`
	IfName      string `json:"ifName"`
	NetworkName string `json:"networkName"`
}

// liveAttachments reads libcni's result cache. A missing cache is an
// error: without it live attachments cannot be told from stale ones.
func liveAttachments(dir string) (map[string][]types.Attachment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the runtime's result cache (without it no attachment can be told live): %w", err)
	}
	live := map[string][]types.Attachment{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var c cacheEntry
		if err := json.Unmarshal(data, &c); err != nil || c.ContainerID == "" || c.NetworkName == "" {
			return nil, fmt.Errorf("cache entry %s: not a libcni result (%w): refusing to guess which attachments live", e.Name(), err)
		}
		live[c.NetworkName] = append(live[c.NetworkName], types.Attachment{ContainerID: c.ContainerID, IfName: c.IfName})
	}
	return live, nil
}

// networks reads every configuration of dir, as libcni does: .conflist
// files, and .conf/.json files holding a single plugin.
func networks(dir string) ([]network, error) {
	var files []string
	for _, ext := range []string{"*.conflist", "*.conf", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, ext))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	var out []network
	for _, f := range files {
		n, err := readNetwork(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func readNetwork(file string) (network, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return network{}, err
	}
	n := network{file: file}
	if err := json.Unmarshal(data, &n); err != nil {
		return network{}, fmt.Errorf("%s: %w", file, err)
	}
	if !strings.HasSuffix(file, ".conflist") {
		var single map[string]any
		if err := json.Unmarshal(data, &single); err != nil {
			return network{}, fmt.Errorf("%s: %w", file, err)
		}
		n.Plugins = []map[string]any{single}
	}
	if n.Name == "" {
		return network{}, fmt.Errorf("%s: no network name", file)
	}
	return n, nil
}

// gcConfig is the plugin's configuration as a 1.1.0 runtime sends it for GC.
func gcConfig(name string, plugin map[string]any, valid []types.Attachment) map[string]any {
	conf := map[string]any{}
	for k, v := range plugin {
		conf[k] = v
	}
	if valid == nil {
		valid = []types.Attachment{}
	}
	conf["name"], conf["cniVersion"] = name, "1.1.0"
	conf["cni.dev/valid-attachments"] = valid
	delete(conf, "prevResult")
	return conf
}

// gc runs one plugin's GC, bounded in time.
func gc(binDir, kind string, conf map[string]any) error {
	stdin, err := json.Marshal(conf)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(binDir, kind))
	cmd.Env = append(os.Environ(), "CNI_COMMAND=GC", "CNI_PATH="+binDir)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	// Kill fails only when the plugin has already ended.
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s GC on network %v: %w: %s", kind, conf["name"], err, strings.TrimSpace(stdout.String()))
	}
	return nil
}
