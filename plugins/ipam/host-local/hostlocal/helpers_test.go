package hostlocal

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// call is one invocation of the plugin, in-process through skel.Plugin.Run.
type call struct {
	cmd, id, ifname, args string
	conf                  string
}

// run invokes the plugin and returns its stdout and exit status.
func run(t testing.TB, c call) (string, int) {
	t.Helper()
	if c.ifname == "" {
		c.ifname = "eth0"
	}
	env := []string{
		"CNI_COMMAND=" + c.cmd, "CNI_CONTAINERID=" + c.id, "CNI_IFNAME=" + c.ifname,
		"CNI_NETNS=/var/run/netns/test-does-not-exist", "CNI_PATH=/opt/cni/bin", "CNI_ARGS=" + c.args,
	}
	var out bytes.Buffer
	code := Plugin().Run(env, strings.NewReader(c.conf), &out, io.Discard)
	return out.String(), code
}

// mustRun invokes the plugin and fails the test unless it succeeds.
func mustRun(t testing.TB, c call) string {
	t.Helper()
	out, code := run(t, c)
	if code != 0 {
		t.Fatalf("%s %s/%s = exit %d: %s", c.cmd, c.id, c.ifname, code, out)
	}
	return out
}

// errorOf decodes an error object printed by the plugin.
func errorOf(t testing.TB, out string) (code uint, msg string) {
	t.Helper()
	var e struct {
		Code uint   `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("decoding error %q: %v", out, err)
	}
	return e.Code, e.Msg
}

// ipsOf returns the addresses of an ADD result at version ≥ 0.3.0.
func ipsOf(t testing.TB, out string) []string {
	t.Helper()
	var r struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding result %q: %v", out, err)
	}
	var ips []string
	for _, ip := range r.IPs {
		ips = append(ips, ip.Address)
	}
	return ips
}

// conf renders a network configuration for host-local with the given ipam
// body (without braces) and extra top-level keys.
func conf(version, dataDir, ipam string, extra ...string) string {
	top := []string{`"cniVersion":"` + version + `"`, `"name":"testnet"`, `"type":"bridge"`}
	top = append(top, extra...)
	body := `"type":"host-local","dataDir":"` + dataDir + `"`
	if ipam != "" {
		body += "," + ipam
	}
	return "{" + strings.Join(top, ",") + `,"ipam":{` + body + "}}"
}

// files lists "name=content" for the files of the network directory,
// sorted, with CRLF shown as \r\n. The spare files last_reserved_ip.<n>.swap
// are left out: their content is whatever was last replaced.
func files(t testing.TB, dataDir string) string {
	t.Helper()
	dir := filepath.Join(dataDir, "testnet")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".swap") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+"="+strings.ReplaceAll(string(data), "\r\n", `\r\n`))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// seed writes files into the network directory as the reference would.
func seed(t testing.TB, dataDir string, contents map[string]string) {
	t.Helper()
	dir := filepath.Join(dataDir, "testnet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range contents {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
