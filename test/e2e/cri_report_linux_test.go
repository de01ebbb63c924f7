package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseCalls(t *testing.T) {
	log := "bridge VERSION 1.1.0 -\nbridge ADD 1.1.0 pod1\nbroken line\nportmap ADD 1.1.0 pod1\nbridge CHECK 1.1.0 pod1\nbridge ADD 1.1.0 pod2\nloopback ADD 0.3.1 pod1\n"
	calls := parseCalls(log)
	if len(calls) != 6 {
		t.Fatalf("parseCalls read %d calls, want 6 (the broken line skipped): %+v", len(calls), calls)
	}
	if got := verbsOf(calls, "bridge", "pod1"); !slices.Equal(got, []string{"ADD", "CHECK"}) {
		t.Errorf("verbsOf(bridge, pod1) = %v, want [ADD CHECK]", got)
	}
	table := strings.Join(callTable(calls), "\n")
	for _, want := range []string{"bridge ADD 1.1.0", "loopback ADD 0.3.1", "bridge VERSION 1.1.0"} {
		if !strings.Contains(table, want) {
			t.Errorf("callTable lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(table, "bridge ADD 1.1.0                         2") {
		t.Errorf("callTable does not count bridge's two ADDs:\n%s", table)
	}
}

func TestPluginLogTable(t *testing.T) {
	log := `{"plugin":"bridge","verb":"ADD"}
{"plugin":"bridge","verb":"STATUS","code":50,"msg":"full"}
{"plugin":"bridge","verb":"STATUS"}
not json
`
	got := pluginLogTable(log)
	want := []string{"bridge ADD               1 (failed: 0)", "bridge STATUS            2 (failed: 1)"}
	if !slices.Equal(got, want) {
		t.Errorf("pluginLogTable = %q, want %q", got, want)
	}
}

func TestCritestSummary(t *testing.T) {
	out := "noise\nRan 15 of 142 Specs in 75.312 seconds\nSUCCESS! -- 15 Passed | 0 Failed | 0 Pending | 127 Skipped\n"
	ran, summary := critestSummary(out)
	if ran != 15 || !strings.Contains(summary, "15 Passed | 0 Failed") {
		t.Errorf("critestSummary = %d, %q; want 15 and the pass line", ran, summary)
	}
	if ran, _ := critestSummary("Ginkgo detected configuration issues"); ran != 0 {
		t.Errorf("critestSummary of a run that ran nothing = %d, want 0", ran)
	}
}

func TestKubeConflist(t *testing.T) {
	data := kubeConflist(t, conflistOptions{version: "1.1.0", logFile: "/run/x.log",
		ranges: [][]string{{"10.244.1.0/24", "10.244.1.250", "10.244.1.252"}, {"fd00::/64"}}})
	var list struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []map[string]any
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.CNIVersion != "1.1.0" || len(list.Plugins) != 2 {
		t.Fatalf("kubeConflist = %s, want cniVersion 1.1.0 and the example's two plugins", data)
	}
	for _, p := range list.Plugins {
		if p["logFile"] != "/run/x.log" || p["logLevel"] != "debug" {
			t.Errorf("plugin %v does not log to /run/x.log at debug", p["type"])
		}
	}
	ranges, _ := json.Marshal(list.Plugins[0]["ipam"].(map[string]any)["ranges"])
	want := `[[{"rangeEnd":"10.244.1.252","rangeStart":"10.244.1.250","subnet":"10.244.1.0/24"}],[{"subnet":"fd00::/64"}]]`
	if string(ranges) != want {
		t.Errorf("ranges = %s, want %s", ranges, want)
	}
}
