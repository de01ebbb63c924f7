package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

// manyAddr is the container address of the attachments with many ports.
const manyAddr = "10.77.0.2"

// iptablesVariant is an iptables of one kind first on the plugin's PATH,
// as Debian's update-alternatives makes it: "" keeps PATH as it is.
type iptablesVariant struct{ name, multi string }

var (
	iptablesNFT    = iptablesVariant{"iptables-nft", "/usr/sbin/xtables-nft-multi"}
	iptablesLegacy = iptablesVariant{"iptables-legacy", "/usr/sbin/xtables-legacy-multi"}
)

// pathFor returns a PATH whose iptables tools are the variant's.
func (v iptablesVariant) pathFor(t *testing.T) string {
	t.Helper()
	if v.multi == "" {
		return os.Getenv("PATH")
	}
	dir := t.TempDir()
	for _, tool := range []string{"iptables", "ip6tables", "iptables-restore", "ip6tables-restore", "iptables-save", "ip6tables-save"} {
		if err := os.Symlink(v.multi, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// direct runs the portmap binary itself, as a runtime does, with PATH.
type direct struct {
	bin, path string
}

// cniErr is the error a plugin prints.
type cniErr struct {
	Code uint   `json:"code"`
	Msg  string `json:"msg"`
}

// run executes verb for container id on conf; a failure comes back as the
// CNI error the plugin printed.
func (d direct) run(verb, id string, conf []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin)
	cmd.Env = []string{"CNI_COMMAND=" + verb, "CNI_CONTAINERID=" + id, "CNI_NETNS=/var/run/netns/" + id,
		"CNI_IFNAME=eth0", "CNI_PATH=" + filepath.Dir(d.bin), "PATH=" + d.path}
	cmd.Stdin = bytes.NewReader(conf)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var e cniErr
		if json.Unmarshal(out.Bytes(), &e) == nil && e.Code != 0 {
			return fmt.Errorf("%s: code %d: %s", verb, e.Code, e.Msg)
		}
		return fmt.Errorf("%s: %w: %s%s", verb, err, out.String(), stderr.String())
	}
	return nil
}

// manyConf is a portmap configuration of n mappings to manyAddr: TCP
// ports from 10000, or with ranges, ranges of two ports every three from
// 2000, TCP and UDP by turns. extra are more keys of the configuration.
func manyConf(t *testing.T, network, backend string, n int, ranges bool, extra map[string]any) []byte {
	t.Helper()
	maps := make([]map[string]any, 0, n)
	for i := 0; i < n; i++ {
		m := map[string]any{"hostPort": 10000 + i, "containerPort": 10000 + i, "protocol": "tcp"}
		if ranges {
			proto := []string{"tcp", "udp"}[i%2]
			m = map[string]any{"hostPort": 2000 + 3*i, "containerPort": 2000 + 3*i, "protocol": proto, "range": 2}
		}
		maps = append(maps, m)
	}
	return portmapConf(t, network, backend, maps, extra)
}

// portmapConf is a portmap configuration, ranges allowed, of the mappings
// to manyAddr, with the extra keys.
func portmapConf(t *testing.T, network, backend string, maps []map[string]any, extra map[string]any) []byte {
	t.Helper()
	conf := map[string]any{"cniVersion": "1.0.0", "name": network, "type": "portmap", "backend": backend,
		"allowPortRanges": true, "runtimeConfig": map[string]any{"portMappings": maps},
		"prevResult": map[string]any{"cniVersion": "1.0.0", "interfaces": []any{map[string]any{"name": "eth0", "sandbox": "/var/run/netns/x"}},
			"ips": []any{map[string]any{"address": manyAddr + "/24", "interface": 0}}}}
	for k, v := range extra {
		conf[k] = v
	}
	data, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// firewallText is what the backend shows of the node's rules: the
// ruleset, or the variant's iptables-save of table nat.
func firewallText(t *testing.T, v iptablesVariant) string {
	t.Helper()
	cmd := exec.Command("nft", "list", "ruleset")
	if v.multi != "" {
		cmd = exec.Command(v.multi, "iptables-save", "-t", "nat")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	return string(out)
}

// filesNaming lists the files under the records' root (/run/cnisuite:
// records, host port claims) that name the container.
func filesNaming(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("/run/cnisuite", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // a missing root names nothing
		}
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(id)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManyHostPorts: one attachment maps 10,000 single host ports, or
// 10,000 ranges (20,000 ports), on nftables, iptables-nft and
// iptables-legacy; ADD succeeds with every mapping written and its ports
// claimed, and DEL leaves no rule of the container, no claim and no
// record. Before, nftables (and iptables-nft, over netlink) failed past
// about 60 mappings: the acks of the transaction overflowed the socket
// (a 5 s wait, then "resource temporarily unavailable", the transaction
// committed but its claims released), and past about 500 the datagram
// overflowed the send buffer ("message too long").
func TestManyHostPorts(t *testing.T) {
	sandbox.Require(t)
	bin := filepath.Join(sandbox.Bin(t), "portmap")
	for _, v := range []iptablesVariant{{name: "nftables"}, iptablesNFT, iptablesLegacy} {
		for _, ranges := range []bool{false, true} {
			name := v.name + "/single"
			if ranges {
				name = v.name + "/ranges"
			}
			t.Run(name, func(t *testing.T) {
				backend := "iptables"
				if v.multi == "" {
					backend = "nftables"
				}
				path := v.pathFor(t)
				id := "many-" + strings.ReplaceAll(name, "/", "-")
				conf := manyConf(t, "many-"+v.name, backend, 10000, ranges, nil)
				addDelMany(t, direct{bin: bin, path: path}, id, conf, func() string { return firewallText(t, v) })
			})
		}
	}
}

// addDelMany adds and deletes the attachment of 10,000 mappings, checking
// what ADD wrote and that DEL leaves nothing of it.
func addDelMany(t *testing.T, d direct, id string, conf []byte, rules func() string) {
	t.Helper()
	if err := d.run("ADD", id, conf); err != nil {
		t.Fatalf("ADD of 10,000 mappings: %v", err)
	}
	if got := strings.Count(rules(), manyAddr); got < 10000 {
		t.Errorf("after ADD, the rules name %s %d times, want at least 10,000 (one per mapping)", manyAddr, got)
	}
	if len(filesNaming(t, id)) == 0 {
		t.Errorf("after ADD, no claim or record names %s", id)
	}
	if err := d.run("DEL", id, conf); err != nil {
		t.Fatalf("DEL of 10,000 mappings: %v", err)
	}
	if got := strings.Count(rules(), manyAddr); got != 0 {
		t.Errorf("after DEL, the rules still name %s %d times", manyAddr, got)
	}
	if left := filesNaming(t, id); len(left) > 0 {
		t.Errorf("after DEL, files still name %s: %q", id, left)
	}
}

// TestManyHostPortsAllOrNothing: an ADD's rules are committed exactly when
// it succeeds, with its host ports claimed. An ADD of 300 mappings (before:
// the kernel committed, its acks overflowed the socket, and the ADD failed
// after 5 s with its claims released, rules in place) succeeds; an ADD of
// 10,000 mappings whose last host port is held in the kernel by an element
// nobody claimed (written by hand) fails, leaving no rule and no claim.
func TestManyHostPortsAllOrNothing(t *testing.T) {
	sandbox.Require(t)
	d := direct{bin: filepath.Join(sandbox.Bin(t), "portmap"), path: os.Getenv("PATH")}
	small := manyConf(t, "many-aon", "nftables", 300, false, nil)
	err := d.run("ADD", "many-300", small)
	if ruled, claimed := strings.Contains(ruleset(t), manyAddr), len(filesNaming(t, "many-300")) > 0; err != nil || !ruled || !claimed {
		t.Errorf("ADD of 300 mappings: %v; rules written %v, ports claimed %v; want success, both", err, ruled, claimed)
	}
	if err := d.run("DEL", "many-300", small); err != nil {
		t.Fatal(err)
	}
	plant := exec.Command("nft", "add", "element", "ip", "cnisuite_portmap", "port_dnat", "{ tcp . 19999 : 10.1.1.1 . 80 }")
	if out, err := plant.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", plant, err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("nft", "delete", "element", "ip", "cnisuite_portmap", "port_dnat", "{ tcp . 19999 }").Run()
	})
	conf := manyConf(t, "many-aon", "nftables", 10000, false, nil)
	if err := d.run("ADD", "many-failed", conf); err == nil {
		t.Errorf("ADD over a host port held in the kernel succeeded")
	}
	if rs := ruleset(t); strings.Contains(rs, manyAddr) {
		t.Errorf("the failed ADD left rules of %s:\n%.2000s", manyAddr, rs)
	}
	if left := filesNaming(t, "many-failed"); len(left) > 0 {
		t.Errorf("the failed ADD left claims or records: %q", left)
	}
	if err := d.run("DEL", "many-failed", conf); err != nil {
		t.Errorf("DEL after the failed ADD: %v", err)
	}
}
