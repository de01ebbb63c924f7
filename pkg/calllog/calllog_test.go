package calllog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSettings(t *testing.T) {
	cases := []struct {
		s       Settings
		level   Level
		problem string
	}{
		{Settings{File: "/var/log/cni.log"}, LevelInfo, ""},
		{Settings{File: "/var/log/cni.log", Level: "debug"}, LevelDebug, ""},
		{Settings{File: "/var/log/cni.log", Level: "error"}, LevelError, ""},
		{Settings{File: "cni.log"}, 0, `logFile "cni.log": must be a clean absolute path`},
		{Settings{File: "/var/log/../cni.log"}, 0, "must be a clean absolute path"},
		{Settings{Level: "info"}, 0, `logFile "": must be a clean absolute path`},
		{Settings{File: "/l", Level: "verbose"}, 0, `logLevel "verbose": must be error, info or debug`},
	}
	for _, tc := range cases {
		level, err := tc.s.Parse()
		if tc.problem == "" && (err != nil || level != tc.level) || tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)) {
			t.Errorf("%+v.Parse() = %v, %v; want %v, %q", tc.s, level, err, tc.level, tc.problem)
		}
	}
}

// readLines returns the decoded lines of a log file.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestLineContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cni.log")
	c := Start(path, LevelDebug)
	c.Step("ipam")()
	c.Debug("rule", "add rule ip cnisuite x")
	id := Identity{Plugin: "bridge", Verb: "ADD", Network: "net", ContainerID: "c1", Netns: "/run/netns/x", IfName: "eth0",
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	if err := c.Finish(id, Outcome{Result: json.RawMessage("{\n \"cniVersion\": \"1.1.0\"\n}")}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	l := lines[0]
	for k, want := range map[string]any{"plugin": "bridge", "verb": "ADD", "network": "net", "containerID": "c1",
		"netns": "/run/netns/x", "ifname": "eth0", "traceparent": id.TraceParent} {
		if l[k] != want {
			t.Errorf("%s = %v, want %v", k, l[k], want)
		}
	}
	if r, _ := l["result"].(map[string]any); r["cniVersion"] != "1.1.0" {
		t.Errorf("result = %v", l["result"])
	}
	if steps, _ := l["steps"].([]any); len(steps) != 1 || steps[0].(map[string]any)["name"] != "ipam" {
		t.Errorf("steps = %v", l["steps"])
	}
	if d, _ := l["debug"].([]any); len(d) != 1 {
		t.Errorf("debug = %v", l["debug"])
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("log file mode = %v, %v; want 0600", st.Mode(), err)
	}
}

func TestLevels(t *testing.T) {
	cases := []struct {
		level Level
		verb  string
		code  uint
		want  bool
	}{
		{LevelError, "ADD", 0, false}, {LevelError, "ADD", 7, true},
		{LevelInfo, "ADD", 0, true}, {LevelInfo, "STATUS", 0, false}, {LevelInfo, "STATUS", 50, true},
		{LevelDebug, "STATUS", 0, true},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "cni.log")
		c := Start(path, tc.level)
		c.Debug("x", 1)
		if err := c.Finish(Identity{Plugin: "p", Verb: tc.verb}, Outcome{Code: tc.code, Msg: "m"}); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(path)
		if got := err == nil; got != tc.want {
			t.Errorf("level %d, %s code %d: logged = %v, want %v", tc.level, tc.verb, tc.code, got, tc.want)
		}
		if got := err == nil && readLines(t, path)[0]["debug"] != nil; got != (tc.want && tc.level == LevelDebug) {
			t.Errorf("level %d: debug details kept = %v", tc.level, got)
		}
	}
}

// Parallel calls, each with its own open file, never lose or mix lines,
// and rotation keeps the file bounded without losing the lines that fit.
func TestParallelAppendAndRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cni.log")
	const writers, each = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c := Start(path, LevelInfo)
				c.limit = 8 << 10
				errs <- c.Finish(Identity{Plugin: "p", Verb: "ADD", ContainerID: fmt.Sprintf("w%d-%d", w, i)}, Outcome{})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, old := readLines(t, path), readLines(t, path+".1")
	for _, p := range []string{path, path + ".1"} {
		if st, _ := os.Stat(p); st.Size() > 8<<10 {
			t.Errorf("%s is %d bytes, past the 8 KiB limit", p, st.Size())
		}
	}
	seen := map[any]bool{}
	for _, l := range append(old, cur...) {
		if seen[l["containerID"]] {
			t.Errorf("line of %v written twice", l["containerID"])
		}
		seen[l["containerID"]] = true
	}
	if len(cur) == 0 || len(old) == 0 {
		t.Errorf("rotation did not happen: %d current and %d rotated lines", len(cur), len(old))
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cni.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Start(link, LevelInfo).Finish(Identity{Verb: "ADD"}, Outcome{}); err == nil {
		t.Error("a log file that is a symbolic link was written through")
	}
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Errorf("the symlink's target got %q", data)
	}
}

func TestTraceParent(t *testing.T) {
	for tp, want := range map[string]string{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01":    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\nx": "",
		"garbage": "", "": "", "---": "",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01":  "",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-011": "",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01":   "",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-": "",
		"0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01":  "",
	} {
		if got := ValidTraceParent(tp); got != want {
			t.Errorf("ValidTraceParent(%q) = %q, want %q", tp, got, want)
		}
	}
}

// A logFile naming a file that is not a call log, past the limit, is not
// rotated, and an existing "<file>.1" that is not a rotated call log is
// never replaced: before, rotation renamed the file over it.
func TestRotationKeepsForeignFiles(t *testing.T) {
	for _, tc := range []struct{ name, current, rotated string }{
		{"foreign .1", "", "someone else's data\n"},
		{"foreign file", "someone else's data, long enough to be past the limit\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "cni.log")
			if tc.rotated != "" {
				if err := os.WriteFile(path+".1", []byte(tc.rotated), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.current != "" {
				if err := os.WriteFile(path, []byte(tc.current), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			for i := 0; i < 20 && err == nil; i++ {
				c := Start(path, LevelInfo)
				c.limit = 40
				err = c.Finish(Identity{Plugin: "p", Verb: "ADD", ContainerID: fmt.Sprint(i)}, Outcome{})
			}
			if err == nil || !strings.Contains(err.Error(), "not rotating") {
				t.Errorf("Finish = %v, want a refusal to rotate", err)
			}
			if tc.rotated != "" {
				if data, _ := os.ReadFile(path + ".1"); string(data) != tc.rotated {
					t.Errorf("%s.1 = %q, want it kept", path, data)
				}
			}
			if tc.current != "" {
				if data, _ := os.ReadFile(path); string(data) != tc.current {
					t.Errorf("%s = %q, want it kept", path, data)
				}
			}
		})
	}
}
