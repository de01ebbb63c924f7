package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/backup"
)

// runPlugin runs one verb in-process through the skel, as a runtime would
// run the binary, with allowList as the allow-list file.
func runPlugin(t *testing.T, allowList, command, conf string, extraEnv ...string) (int, *types.Error, string) {
	t.Helper()
	tu := &tuner{allowList: allowList, sysRoot: "/proc/sys"}
	p := &skel.Plugin{Name: "tuning", Add: tu.Add, Check: tu.Check, Del: tu.Del, GC: tu.GC, Status: tu.Status}
	env := append([]string{
		"CNI_COMMAND=" + command, "CNI_CONTAINERID=ctr", "CNI_NETNS=/nonexistent/netns",
		"CNI_IFNAME=eth0", "CNI_PATH=/nonexistent",
	}, extraEnv...)
	var stdout, stderr bytes.Buffer
	code := p.Run(env, strings.NewReader(conf), &stdout, &stderr)
	if code == 0 {
		return 0, nil, stdout.String()
	}
	var e types.Error
	if err := json.Unmarshal(stdout.Bytes(), &e); err != nil {
		t.Fatalf("%s: exit %d, stdout %q is not an error object: %v", command, code, stdout.String(), err)
	}
	return code, &e, stdout.String()
}

// TestRefusals covers what ADD and CHECK refuse before touching any
// namespace; none of it needs root.
func TestRefusals(t *testing.T) {
	allow := writeAllowList(t, `net\.ipv4\.conf\.IFNAME\.[a-z_]+`)
	const head = `"cniVersion":"1.0.0","name":"net","type":"tuning"`
	const prev = `,"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/x"}]}`
	tests := []struct {
		name, command, conf string
		env                 []string
		code                uint
		text                string
	}{
		{"ADD without prevResult", "ADD", `{` + head + `,"mtu":1400}`, nil, 7, "required prevResult missing"},
		{"CHECK without prevResult", "CHECK", `{` + head + `,"mtu":1400}`, nil, 7, "required prevResult missing"},
		{"sysctl outside the allow-list", "ADD", `{` + head + `,"sysctl":{"net.core.somaxconn":"1"}` + prev + `}`, nil, 7,
			`sysctl "net.core.somaxconn" is not allowed`},
		{"substring of an allowed key", "ADD", `{` + head + `,"sysctl":{"net.ipv4.conf.IFNAME.rp_filter.x":"1"}` + prev + `}`, nil, 7,
			`is not allowed`},
		{"sysctl escaping net", "ADD", `{` + head + `,"sysctl":{"net/../kernel/core_pattern":"x"}` + prev + `}`, nil, 7,
			`"net/../kernel/core_pattern"`},
		{"duplicate sysctl keys", "ADD", `{` + head + `,"sysctl":{"net.a":"1","net.a":"1"}` + prev + `}`, nil, 7,
			"duplicated sysctl keys are not allowed"},
		{"sysctl value not a string", "ADD", `{` + head + `,"sysctl":{"net.a":1}` + prev + `}`, nil, 7, "not a JSON string"},
		{"mtu not a number", "ADD", `{` + head + `,"mtu":"9000"` + prev + `}`, nil, 7, "mtu: got a JSON string"},
		{"interface name with slash", "ADD", `{` + head + prev + `}`, []string{"CNI_IFNAME=a/b"}, 4, `"a/b"`},
		{"unknown CNI_ARGS", "ADD", `{` + head + prev + `}`, []string{"CNI_ARGS=FOO=1"}, 2, "FOO"},
		{"netns missing on ADD", "ADD", `{` + head + `,"mtu":1400` + prev + `}`, nil, 4, `CNI_NETNS "/nonexistent/netns"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, e, out := runPlugin(t, allow, tc.command, tc.conf, tc.env...)
			if code != 1 || e.Code != tc.code || !strings.Contains(e.Msg, tc.text) {
				t.Fatalf("%s = exit %d, %s; want code %d containing %q", tc.command, code, out, tc.code, tc.text)
			}
		})
	}
}

// TestDelGCStatusWithoutNetns: DEL with the netns gone removes the state;
// GC and STATUS need no namespace at all.
func TestDelGCStatusWithoutNetns(t *testing.T) {
	dataDir := t.TempDir()
	conf := `{"cniVersion":"1.1.0","name":"net","type":"tuning","dataDir":"` + dataDir + `"}`
	if err := (backup.Store{Dir: dataDir}).Save("ctr", "eth0", &backup.State{Network: "net", MTU: 1500}); err != nil {
		t.Fatal(err)
	}
	if code, _, out := runPlugin(t, "", "DEL", conf); code != 0 {
		t.Fatalf("DEL with the netns gone = %s, want success", out)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "ctr_eth0.json")); !os.IsNotExist(err) {
		t.Errorf("state file after DEL: %v, want it removed", err)
	}
	if code, _, out := runPlugin(t, "", "DEL", conf); code != 0 {
		t.Errorf("DEL without state = %s, want success", out)
	}
	if err := (backup.Store{Dir: dataDir}).Save("old", "eth0", &backup.State{Network: "net"}); err != nil {
		t.Fatal(err)
	}
	gc := strings.TrimSuffix(conf, "}") + `,"cni.dev/valid-attachments":[{"containerID":"ctr","ifname":"eth0"}]}`
	if code, _, out := runPlugin(t, "", "GC", gc); code != 0 {
		t.Fatalf("GC = %s, want success", out)
	}
	if got := listDir(t, dataDir); len(got) != 0 {
		t.Errorf("state files after GC: %v, want none", got)
	}
	if code, _, out := runPlugin(t, "", "STATUS", conf); code != 0 {
		t.Errorf("STATUS = %s, want success", out)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
