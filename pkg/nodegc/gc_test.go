package nodegc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// recorder is a stand-in plugin that appends its environment's verb and
// its stdin to a file.
const recorder = "#!/bin/sh\n{ echo \"$CNI_COMMAND $CNI_PATH\"; cat; echo; } >> \"$(dirname \"$0\")/calls\"\n"

// Every plugin of ours in every network gets GC at 1.1.0 with exactly the
// live attachments of its network; other plugins are not run.
func TestGCKeepsWhatTheRuntimeKnows(t *testing.T) {
	root := t.TempDir()
	bin, conf, cache := filepath.Join(root, "bin"), filepath.Join(root, "net.d"), filepath.Join(root, "cache")
	for _, p := range []string{"bridge", "portmap", "tuning", "firewall"} {
		write(t, filepath.Join(bin, p), recorder)
	}
	write(t, filepath.Join(conf, "10-a.conflist"), `{"cniVersion":"0.4.0","name":"a","plugins":[
		{"type":"bridge","bridge":"br-a","ipam":{"type":"host-local"}},{"type":"firewall"},{"type":"portmap","capabilities":{"portMappings":true}}]}`)
	write(t, filepath.Join(conf, "20-b.conf"), `{"cniVersion":"1.0.0","name":"b","type":"tuning","mtu":1400}`)
	write(t, filepath.Join(cache, "results", "a-live1-eth0"), `{"kind":"cniCacheV1","containerId":"live1","ifName":"eth0","networkName":"a"}`)
	write(t, filepath.Join(cache, "results", "a-live2-eth0"), `{"kind":"cniCacheV1","containerId":"live2","ifName":"eth0","networkName":"a"}`)

	var out strings.Builder
	if err := Run(Options{BinDir: bin, ConfDir: conf, CacheDir: cache}, &out); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(bin, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(calls) != 6 {
		t.Fatalf("%d lines of calls, want 3 calls (bridge, portmap, tuning):\n%s", len(calls), data)
	}
	got := map[string][]string{}
	for i := 0; i < len(calls); i += 2 {
		if calls[i] != "GC "+bin {
			t.Errorf("call %d: env %q, want GC with CNI_PATH=%s", i/2, calls[i], bin)
		}
		var c struct {
			Type, Name, CNIVersion string
			Valid                  []struct{ ContainerID string } `json:"cni.dev/valid-attachments"`
		}
		if err := json.Unmarshal([]byte(calls[i+1]), &c); err != nil {
			t.Fatal(err)
		}
		if c.CNIVersion != "1.1.0" {
			t.Errorf("%s GC at cniVersion %q, want 1.1.0", c.Type, c.CNIVersion)
		}
		var ids []string
		for _, v := range c.Valid {
			ids = append(ids, v.ContainerID)
		}
		sort.Strings(ids)
		got[c.Name+"/"+c.Type] = ids
	}
	want := map[string]string{"a/bridge": "live1 live2", "a/portmap": "live1 live2", "b/tuning": ""}
	for k, w := range want {
		if strings.Join(got[k], " ") != w {
			t.Errorf("%s kept %v, want [%s]", k, got[k], w)
		}
	}
}

// Without the runtime's cache nothing can be told live: nothing is run.
func TestGCRefusesWithoutCache(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "bin", "bridge"), recorder)
	write(t, filepath.Join(root, "net.d", "a.conflist"), `{"name":"a","plugins":[{"type":"bridge"}]}`)
	err := Run(Options{BinDir: filepath.Join(root, "bin"), ConfDir: filepath.Join(root, "net.d"), CacheDir: filepath.Join(root, "nocache")}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "result cache") {
		t.Errorf("Run without a cache = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "calls")); err == nil {
		t.Error("a plugin ran although no attachment could be told live")
	}
}
