// Package formats pins, with the built plugins as a runtime runs them, every
// file they keep on a node (docs/formats.md): what one pod on bridge,
// host-local, portmap and tuning leaves at its default places after ADD,
// and what is left after its DEL, on each firewall backend.
package formats

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"golang.org/x/sys/unix"

	"cnisuite/test/golden"
	"cnisuite/test/sandbox"
)

// nodePlaces are the directories the plugins keep state in by default,
// each given a fresh tmpfs for the test.
var nodePlaces = []string{"/run/cnisuite", "/run/cni", "/run/sysctl.d", "/var/lib/cni/networks"}

// freshPlaces mounts an empty tmpfs on each of nodePlaces until the test
// ends, so that only this test's files are listed.
func freshPlaces(t *testing.T) {
	t.Helper()
	for _, dir := range nodePlaces {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755,size=4m"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", dir, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		})
	}
}

// listPlaces lists every file below nodePlaces, with the parts that vary
// between runs normalized: the pod's netns path, MAC addresses, the
// directories named after the node's network namespace, rule handles, the
// lease index's stamp and the boot ID.
func listPlaces(t *testing.T, netns string) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range nodePlaces {
		b.WriteString("# " + dir + "/\n" + golden.Tree(t, dir))
	}
	s := strings.ReplaceAll(b.String(), netns, "<netns>")
	for re, with := range map[string]string{
		`"mac":"[0-9a-f:]{17}"`: `"mac":"<mac>"`,
		`fw-backend/c\d+/`:      `fw-backend/<netns cookie>/`,
		`iptables-jumps/\d+/`:   `iptables-jumps/<netns inode>/`,
		`(?m)^(\t\| (?:PREROUTING|OUTPUT|POSTROUTING)) \d+$`: `$1 <handle>`,
		`(?m)(\.stamp\n\t\| )\d{20}$`:                        `$1<stamp>`,
		`(?m)(\.host-local-boot/pods\n\t\| )[0-9a-f-]{36}$`:  `$1<boot ID>`,
	} {
		s = regexp.MustCompile(re).ReplaceAllString(s, with)
	}
	return s
}

// conflist is the pod's network; backend "" names none (the node's choice,
// recorded).
func conflist(backend string) string {
	bkey, pkey := "", ""
	if backend != "" {
		bkey, pkey = fmt.Sprintf(`"ipMasqBackend":%q,`, backend), fmt.Sprintf(`"backend":%q,`, backend)
	}
	return fmt.Sprintf(`{"cniVersion":"1.1.0","name":"pods","plugins":[
	  {"type":"bridge","bridge":"cnifmt0","isGateway":true,"ipMasq":true,%s"removeEmptyBridge":true,
	   "ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/24"}],[{"subnet":"fd00:88::/64"}]]}},
	  {"type":"portmap",%s"capabilities":{"portMappings":true}},
	  {"type":"tuning","mtu":1400,"sysctl":{"net.ipv4.conf.eth0.arp_notify":"1"}}]}`, bkey, pkey)
}

// TestFormatNodeFiles runs ADD and DEL of one pod as a runtime does, with
// a fresh network namespace as the node, and pins the files at the default
// places after each (testdata/<backend>_add and _del.golden; "auto" names
// no backend).
func TestFormatNodeFiles(t *testing.T) {
	sandbox.Require(t)
	for _, backend := range []string{"nftables", "iptables", ""} {
		t.Run(cmp.Or(backend, "auto"), func(t *testing.T) {
			freshPlaces(t)
			node := sandbox.NewNS(t)
			err := node.Do(func() error { podFiles(t, backend); return nil })
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// podFiles adds and deletes the pod in the calling thread's network
// namespace (the plugins inherit it) and checks the files after each.
func podFiles(t *testing.T, backend string) {
	name := cmp.Or(backend, "auto")
	rt, list := sandbox.Runtime(t), sandbox.ConfList(t, conflist(backend))
	pod := sandbox.NewNS(t)
	rc := &libcni.RuntimeConf{ContainerID: "c0ffee01", IfName: "eth0", NetNS: pod.Path(),
		Args:           [][2]string{{"K8S_POD_NAME", "web"}},
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}}}}
	ctx := context.Background()
	if _, err := rt.AddNetworkList(ctx, list, rc); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	golden.Check(t, name+"_add", listPlaces(t, pod.Path()))
	if err := rt.DelNetworkList(ctx, list, rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	golden.Check(t, name+"_del", listPlaces(t, pod.Path()))
}
