package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/test/sandbox"
)

// execBridge runs the built bridge binary once, as a runtime would, and
// returns its stdout and whether it exited 0.
func execBridge(t *testing.T, env []string, stdin []byte) (string, bool) {
	t.Helper()
	bin := sandbox.Bin(t)
	cmd := exec.Command(filepath.Join(bin, "bridge"))
	cmd.Env = append(env, "CNI_PATH="+bin)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Logf("bridge %v: %v; stderr: %s", env, err, stderr.String())
	}
	return stdout.String(), err == nil
}

// A stale or forged prevResult that names another pod's host veth (a port
// of the same bridge) does not make DEL delete it: the name is a hint, and
// the link is neither this attachment's deterministic name nor a veth whose
// peer is in CNI_NETNS. Before, DEL of A deleted B's port and returned 0.
func TestDelForgedPrevResultKeepsOtherPod(t *testing.T) {
	n := newNet(t, "1.0.0", "brforge0", `"isGateway":true`, hostLocal(t, "10.77.0.0/24"))
	a, b := n.add("pod-a"), n.add("pod-b")
	victim := b.res.Interfaces[ifHost].Name
	for _, netns := range []string{a.ns.Path(), ""} {
		prev := *a.res
		prev.Interfaces = append(prev.Interfaces[:0:0], a.res.Interfaces...)
		forged := *prev.Interfaces[ifHost]
		forged.Name = victim
		prev.Interfaces[ifHost] = &forged
		encoded, err := prev.Encode(n.list.CNIVersion)
		if err != nil {
			t.Fatal(err)
		}
		stdin := bridgeStdin(t, n, json.RawMessage(encoded))
		env := []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=pod-a", "CNI_IFNAME=eth0", "CNI_NETNS=" + netns}
		if out, ok := execBridge(t, env, stdin); !ok {
			t.Fatalf("DEL of pod-a (netns %q) with a prevResult naming pod-b's port: %s", netns, out)
		}
		if ports := bridgePorts(t, n.bridge); !strings.Contains(strings.Join(ports, " "), victim) {
			t.Fatalf("after DEL of pod-a (netns %q), the bridge's ports are %v: pod-b's %s is gone", netns, ports, victim)
		}
		if err := reach(nil, b.ns, b.addr(4)); err != nil {
			t.Errorf("pod-b unreachable after DEL of pod-a: %v", err)
		}
	}
}

// bridgeStdin is the network's bridge configuration with prev as its
// prevResult, as a runtime sends it on DEL.
func bridgeStdin(t *testing.T, n *testNet, prev any) []byte {
	t.Helper()
	var conf map[string]any
	if err := json.Unmarshal(n.list.Plugins[0].Bytes, &conf); err != nil {
		t.Fatal(err)
	}
	conf["name"], conf["cniVersion"], conf["prevResult"] = n.list.Name, n.list.CNIVersion, prev
	data, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
