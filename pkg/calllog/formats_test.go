package calllog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"cnisuite/test/golden"
)

// TestFormatLine pins the per-call log line (docs/formats.md, "Per-call
// log"): a successful ADD at debug and a failed DEL, every key. Only what
// truly varies is normalized — the time, the pid and the durations —
// after checking that each is what it claims to be.
func TestFormatLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cni.log")
	id := Identity{Plugin: "bridge", Verb: "ADD", Network: "net1", ContainerID: "c0ffee01",
		Netns: "/run/netns/cni-1234", IfName: "eth0", TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	c := Start(path, LevelDebug)
	c.Step("setupVeth")()
	c.Warn("ipam: range 10.88.0.0/24 nearly full")
	c.Debug("masquerade", "10.88.0.2")
	if err := c.Finish(id, Outcome{Result: json.RawMessage("{\n \"cniVersion\": \"1.1.0\"\n}")}); err != nil {
		t.Fatalf("Finish(ADD): %v", err)
	}
	id.Verb, id.TraceParent = "DEL", ""
	if err := Start(path, LevelInfo).Finish(id, Outcome{Code: 11, Msg: "lease directory lock: timed out"}); err != nil {
		t.Fatalf("Finish(DEL): %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log file mode: %v, %v; want 0600", fi, err)
	}
	golden.Check(t, "format_line", normalizeLine(t, string(data)))
}

var (
	timeRE = regexp.MustCompile(`"time":"([^"]*)"`)
	pidRE  = regexp.MustCompile(`"pid":(\d+),`)
	msRE   = regexp.MustCompile(`"(durationMs|ms)":([0-9.e-]+)`)
)

func normalizeLine(t *testing.T, s string) string {
	t.Helper()
	for _, m := range timeRE.FindAllStringSubmatch(s, -1) {
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || m[1][len(m[1])-1] != 'Z' {
			t.Errorf("time %q is not RFC 3339 in UTC: %v", m[1], err)
		}
	}
	for _, m := range pidRE.FindAllStringSubmatch(s, -1) {
		if m[1] != strconv.Itoa(os.Getpid()) {
			t.Errorf("pid %s, want this process's %d", m[1], os.Getpid())
		}
	}
	for _, m := range msRE.FindAllStringSubmatch(s, -1) {
		if _, err := strconv.ParseFloat(m[2], 64); err != nil {
			t.Errorf("%s %q is not a number", m[1], m[2])
		}
	}
	s = timeRE.ReplaceAllString(s, `"time":"<RFC 3339, UTC>"`)
	s = pidRE.ReplaceAllString(s, `"pid":<pid>,`)
	return msRE.ReplaceAllString(s, `"$1":<milliseconds>`)
}
