package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"cnisuite/test/sandbox"
)

// calllogList is a chain whose every plugin logs to one file; host-local
// logs too, through the bridge configuration it is delegated with.
const calllogList = `{
  "cniVersion": "1.1.0",
  "name": "e2e-log",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni-e2elog", "isGateway": true, "ipMasq": true,
      "logFile": %[2]q, "logLevel": "debug",
      "ipam": { "type": "host-local", "dataDir": %[1]q, "ranges": [[{ "subnet": "10.92.0.0/24" }]] }
    },
    { "type": "tuning", "mtu": 1400, "logFile": %[2]q },
    { "type": "portmap", "capabilities": { "portMappings": true }, "logFile": %[2]q, "logLevel": "debug" }
  ]
}`

// logLine is what the test reads of a log line.
type logLine struct {
	Plugin, Verb, Network, ContainerID, Netns, IfName string
	Code                                              uint
	Result                                            json.RawMessage
	Steps                                             []struct{ Name string }
	Debug                                             []struct{ What string }
}

// TestPerCallLog: ADD and DEL through the runtime library with logFile set
// in every plugin leave one line per plugin and verb, naming the call and,
// for ADD, the result and the steps each plugin timed.
func TestPerCallLog(t *testing.T) {
	sandbox.Require(t)
	logFile := filepath.Join(t.TempDir(), "cni.log")
	list := sandbox.ConfList(t, fmt.Sprintf(calllogList, t.TempDir(), logFile))
	sandbox.RemoveLinkAtEnd(t, "cni-e2elog")
	rt := libcni.NewCNIConfigWithCacheDir([]string{pluginDir(t)}, t.TempDir(), nil)
	rc := &libcni.RuntimeConf{ContainerID: uniqueName("logged"), NetNS: sandbox.NewNS(t).Path(), IfName: "eth0",
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": 8084, "containerPort": 80, "protocol": "tcp"}}}}
	node := sandbox.NewNS(t)
	var addErr, delErr error
	if err := node.Do(func() error {
		_, addErr = rt.AddNetworkList(context.Background(), list, rc)
		delErr = rt.DelNetworkList(context.Background(), list, rc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if addErr != nil || delErr != nil {
		t.Fatalf("ADD: %v; DEL: %v", addErr, delErr)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the log after ADD and DEL:\n%s", data)
	lines := map[string]logLine{}
	for _, raw := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("line %q: %v", raw, err)
		}
		if l.ContainerID != rc.ContainerID || l.Network != "e2e-log" || l.IfName != "eth0" || l.Code != 0 {
			t.Errorf("line does not name the call, or failed: %s", raw)
		}
		lines[l.Plugin+" "+l.Verb] = l
	}
	want := map[string]string{
		"bridge ADD": "ipam", "host-local ADD": "allocate", "tuning ADD": "container", "portmap ADD": "firewall",
		"bridge DEL": "", "host-local DEL": "leases", "tuning DEL": "", "portmap DEL": "firewall",
	}
	for key, step := range want {
		l, ok := lines[key]
		switch {
		case !ok:
			t.Errorf("no line for %s", key)
		case strings.HasSuffix(key, "ADD") && !strings.Contains(string(l.Result), "10.92.0."):
			t.Errorf("%s line has no result with the address: %s", key, l.Result)
		case step != "" && !hasStep(l, step):
			t.Errorf("%s line lacks step %q: %+v", key, step, l.Steps)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d distinct plugin/verb lines, want %d", len(lines), len(want))
	}
	if d := lines["portmap ADD"].Debug; len(d) == 0 {
		t.Errorf("portmap at debug level logged no detail")
	}
}

func hasStep(l logLine, name string) bool {
	for _, s := range l.Steps {
		if s.Name == name {
			return true
		}
	}
	return false
}
